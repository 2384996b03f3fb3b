"""The knowledge base's server stores trust the deployment's CA bundle (REQUESTS_CA_BUNDLE or SSL_CERT_FILE):
a Qdrant server and a Neo4j server with certificates of a private CA are verified against it, and refused
without it. The Qdrant side runs against the fake Qdrant REST server over https; the Neo4j side against a TLS
listener that records the Bolt handshake (no Neo4j server runs here: only the TLS trust path is exercised)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.factory import build_graph_store, build_vector_store
from hummingbird_agent.config.loading import LoadedConfig, load_config, required_env_names
from hummingbird_agent.errors import AgentError, ConfigError, TransientError
from tests.servers.qdrant import QdrantServer
from tests.servers.tls import PrivateCA, private_ca

BOLT_MAGIC = bytes.fromhex("6060b017")


@pytest.fixture
def ca(tmp_path: Path) -> PrivateCA:
    return private_ca(tmp_path)


@pytest.fixture
def qdrant(ca: PrivateCA) -> Iterator[QdrantServer]:
    server = QdrantServer()
    server.tls = ca.server_context()
    with server:
        yield server


def loaded(tmp_path: Path, bamboo: dict[str, object], env: dict[str, str]) -> LoadedConfig:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({"bamboo": {"enabled": True, **bamboo}, "workflows": {}}))
    return load_config(path, environ=env)


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"])
async def test_a_qdrant_server_of_a_private_ca_is_trusted_through_the_bundle(
        tmp_path: Path, ca: PrivateCA, qdrant: QdrantServer, variable: str) -> None:
    cfg = loaded(tmp_path, {"vectors": {"url": qdrant.url.replace("127.0.0.1", "localhost"), "collection": "kb"}},
                 {variable: str(ca.ca_file)})
    store = build_vector_store(cfg, 64)
    await store.open()
    await store.aclose()
    assert qdrant.collections["kb"]["vectors"]["size"] == 64


async def test_without_the_bundle_the_qdrant_server_is_refused(tmp_path: Path, qdrant: QdrantServer) -> None:
    store = build_vector_store(loaded(tmp_path, {"vectors": {"url": qdrant.url}}, {}), 64)
    with pytest.raises(TransientError, match="qdrant open"):
        await store.open()
    assert qdrant.collections == {}


def test_an_unusable_bundle_is_one_config_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CA bundle .*missing.pem: cannot be used"):
        build_vector_store(loaded(tmp_path, {"vectors": {"url": "https://localhost:6333"}},
                                  {"REQUESTS_CA_BUNDLE": str(tmp_path / "missing.pem")}), 64)


class BoltListener:
    """Accepts TLS connections; records whether the handshake succeeded and the first bytes after it."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.handshakes: list[str] = []
        self.preambles: list[bytes] = []
        self.recorded = threading.Event()
        self._context = context
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                try:
                    with self._context.wrap_socket(conn, server_side=True) as tls:
                        self.handshakes.append("ok")
                        self.preambles.append(tls.recv(4))
                except (ssl.SSLError, OSError) as exc:
                    self.handshakes.append(type(exc).__name__)
            self.recorded.set()

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def bolt(ca: PrivateCA) -> Iterator[BoltListener]:
    listener = BoltListener(ca.server_context())
    yield listener
    listener.close()


@pytest.mark.parametrize("trusted", [True, False])
async def test_a_neo4j_server_of_a_private_ca_is_verified_against_the_bundle(
        tmp_path: Path, ca: PrivateCA, bolt: BoltListener, trusted: bool) -> None:
    env = {"NEO4J_USER": "neo4j", "NEO4J_PASSWORD": "a-long-password", **(
        {"REQUESTS_CA_BUNDLE": str(ca.ca_file)} if trusted else {})}
    cfg = loaded(tmp_path, {"graph": {"backend": "neo4j", "uri": f"bolt+s://localhost:{bolt.port}"}}, env)
    with pytest.raises(AgentError):  # the listener speaks no Bolt after the handshake
        await build_graph_store(cfg).open()
    assert bolt.recorded.wait(30)  # the listener's thread notes the connection after the client gave up
    if trusted:
        assert bolt.handshakes[0] == "ok" and bolt.preambles[0] == BOLT_MAGIC
    else:
        assert "ok" not in bolt.handshakes and not bolt.preambles


def test_the_qdrant_api_key_is_a_secret_to_redact(tmp_path: Path) -> None:
    key = "qdrant-key-0123456789"
    cfg = loaded(tmp_path, {"vectors": {"url": "https://localhost:6333"}}, {"QDRANT_API_KEY": key})
    assert key in cfg.secret_values()
    assert "QDRANT_API_KEY" not in required_env_names(cfg.config)  # a server without keys needs none


async def test_a_reset_server_collection_gets_its_new_size_and_its_payload_indexes(
        tmp_path: Path, ca: PrivateCA, qdrant: QdrantServer) -> None:
    cfg = loaded(tmp_path, {"vectors": {"url": qdrant.url, "collection": "kb"}}, {"SSL_CERT_FILE": str(ca.ca_file)})
    store = build_vector_store(cfg, None)  # re-indexing opens the collection at whatever size it has
    await store.open()
    await store.reset(96)
    await store.aclose()
    assert qdrant.collections["kb"]["vectors"]["size"] == 96
    assert set(qdrant.collections["kb"]["indexes"]) == {"section", "incident_id", "project"}
