"""Neo4j graph backend through the official async driver; the only importer of `neo4j`.

It runs the shared statements of stores/cypher.py; its own text is the uniqueness constraints.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from hummingbird_agent.bamboo.stores import cypher
from hummingbird_agent.bamboo.stores.base import address, trusting
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError

T = TypeVar("T")
log = logging.getLogger(__name__)


def schema_statements() -> list[str]:
    """Uniqueness on (label, name) makes concurrent MERGEs of one node safe in Neo4j; the index on the incidents'
    project serves a project's reads (its incidents, not every record)."""
    labels = [*cypher.GRAPH_LABELS, cypher.INCIDENT_LABEL]
    return [*(f"CREATE CONSTRAINT bamboo_{label.lower()}_name IF NOT EXISTS FOR (n:{label}) REQUIRE n.name IS UNIQUE"
              for label in labels),
            f"CREATE INDEX bamboo_incident_project IF NOT EXISTS FOR (n:{cypher.INCIDENT_LABEL}) ON (n.project)"]


@asynccontextmanager
async def _mapped(action: str) -> AsyncIterator[None]:
    """Map driver exceptions to our typed errors, once, at the adapter edge."""
    import neo4j.exceptions as nx

    try:
        yield
    except nx.AuthError as exc:
        raise ConfigError(f"neo4j {action}: authentication failed") from exc
    except (nx.ServiceUnavailable, nx.SessionExpired, nx.TransientError) as exc:
        raise TransientError(f"neo4j {action}: {type(exc).__name__}") from exc
    except nx.Neo4jError as exc:
        raise PermanentError(f"neo4j {action}: {exc.code}") from exc


class _Tx:
    def __init__(self, tx: Any) -> None:
        self._tx = tx

    async def run(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        result = await self._tx.run(query, params)
        data: list[dict[str, Any]] = await result.data()
        return data

    async def run_all(self, statements: Sequence[tuple[str, dict[str, object]]]) -> None:
        for query, params in statements:
            await self.run(query, params)


class Neo4jSession:
    """CypherSession over a Neo4j server. `driver` may be given (already built); else built in open()."""

    def __init__(self, uri: str | None, auth: tuple[str, str] | None, database: str | None = None,
                 driver: Any = None, ca_file: str | None = None) -> None:
        """`ca_file`: the deployment's CA bundle; a neo4j+s:// or bolt+s:// server's certificate is verified
        against it instead of the system's."""
        self._uri = uri
        self._auth = auth
        self._database = database
        self._driver = driver
        self._ca_file = ca_file

    async def open(self) -> None:
        if self._driver is None:
            if not self._uri:
                raise ConfigError("bamboo.graph.uri: the neo4j backend needs a bolt:// or neo4j:// URI")
            import neo4j.exceptions as nx
            from neo4j import AsyncGraphDatabase

            uri, tls = _tls(self._uri, self._ca_file)
            try:
                self._driver = AsyncGraphDatabase.driver(uri, auth=self._auth, **tls)
            except (nx.ConfigurationError, ValueError):
                # The driver's message repeats the URI, user info included: name only the safe part.
                raise ConfigError(f"bamboo.graph.uri {address(self._uri)}: not a usable Neo4j URI (bolt:// or "
                                  "neo4j://, credentials in NEO4J_USER / NEO4J_PASSWORD, not in the URI)") from None
        try:
            async with _mapped(f"connect to {address(self._uri or '')}"):
                await self._driver.verify_connectivity()
                async with self._driver.session(database=self._database) as session:
                    for statement in schema_statements():
                        await session.run(statement)
        except BaseException:
            await self.aclose()  # a failed open leaves no driver (and no socket) behind
            raise

    async def aclose(self) -> None:
        if self._driver is not None:
            await self._driver.close()
            self._driver = None

    async def write(self, work: Callable[[Any], Awaitable[T]]) -> T:
        async def unit(tx: Any) -> T:
            return await work(_Tx(tx))

        async with _mapped("write"), self._driver.session(database=self._database) as session:
            value: T = await session.execute_write(unit)
            return value

    async def read(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        async def unit(tx: Any) -> list[dict[str, Any]]:
            return await _Tx(tx).run(query, params)

        async with _mapped("read"), self._driver.session(database=self._database) as session:
            rows: list[dict[str, Any]] = await session.execute_read(unit)
            return rows


def _tls(uri: str, ca_file: str | None) -> tuple[str, dict[str, Any]]:
    """The driver's URI and TLS settings: with a CA bundle, a verifying `+s` scheme becomes the plain scheme plus
    an SSL context trusting that bundle (the driver takes a custom trust only with the plain schemes)."""
    scheme, sep, rest = uri.partition("://")
    if not ca_file or scheme not in ("neo4j+s", "bolt+s"):
        return uri, {}
    return f"{scheme.removesuffix('+s')}{sep}{rest}", {"ssl_context": trusting(ca_file)}

