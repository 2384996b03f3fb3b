"""Build the knowledge base's parts from the loaded config: stores, embedder, accumulator."""

from __future__ import annotations

from hummingbird_agent.bamboo.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry
from hummingbird_agent.config import LoadedConfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.models import Model


def build_graph_store(loaded: LoadedConfig) -> CypherGraphStore:
    cfg = loaded.config.bamboo.graph
    if cfg.backend == "neo4j":
        from hummingbird_agent.bamboo.stores.neo4j_backend import Neo4jSession

        user, password = loaded.secret(cfg.user_env), loaded.secret(cfg.password_env)
        auth = (user, password) if user and password else None
        return CypherGraphStore(Neo4jSession(cfg.uri, auth, cfg.database))
    from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession

    return CypherGraphStore(LadybugSession(str(loaded.resolve(cfg.path))))


def build_embedder(loaded: LoadedConfig) -> Embedder:
    cfg = loaded.config.bamboo.embeddings
    if cfg.provider == "gemini":
        from hummingbird_agent.bamboo.embeddings.gemini import GeminiEmbedder

        model_cfg = loaded.config.model
        key = loaded.secret(model_cfg.api_key_env)
        if not key:
            raise ConfigError(f"bamboo.embeddings: gemini needs the API key in {model_cfg.api_key_env}")
        return GeminiEmbedder(key, cfg.model, cfg.dimensions, model_cfg.base_url, model_cfg.api_version)
    if cfg.provider == "minilm":
        from hummingbird_agent.bamboo.embeddings.minilm import MiniLMEmbedder

        return MiniLMEmbedder(cfg.dimensions)
    from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder

    return HashingEmbedder(cfg.dimensions)


def build_stores(loaded: LoadedConfig) -> Stores:
    cfg = loaded.config.bamboo
    embedder = build_embedder(loaded)
    vectors = QdrantVectorStore(cfg.vectors.collection, embedder.dimensions, url=cfg.vectors.url,
                                path=None if cfg.vectors.url else str(loaded.resolve(cfg.vectors.path)),
                                api_key=loaded.secret(cfg.vectors.api_key_env))
    return Stores(build_graph_store(loaded), vectors, embedder)


def build_accumulator(loaded: LoadedConfig, model: Model, stores: Stores | None) -> KnowledgeAccumulator:
    cfg = loaded.config.bamboo
    llm = JsonLLM(ModelText(model, cfg.model))
    salt = (loaded.secret(cfg.pseudonym_salt_env) or "").encode()
    strategy = default_registry().create(cfg.extraction_strategy, StrategyDeps(llm, salt))
    return KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, stores,
                                max_review_retries=cfg.max_review_retries)
