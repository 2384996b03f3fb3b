"""Build the knowledge base's parts from the loaded config: stores, embedder, accumulator, and the
explorer (ContextEnricher) both the accumulator and the navigator use when `bamboo.explore` is on.
"""

from __future__ import annotations

from typing import cast

from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.explore.session import ConfiguredEnricher, StrategyClients, TaskSummary
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient, McpClient
from hummingbird_agent.bamboo.panda.index import PandaIndex
from hummingbird_agent.bamboo.panda.tools import PandaSupport
from hummingbird_agent.bamboo.stores.base import Stores, trusting
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import (
    ExtractionStrategy,
    SourceNavigator,
    StrategyDeps,
    default_registry,
    source_navigator_of,
)
from hummingbird_agent.bamboo.workflow_names import ACCUMULATE_WORKFLOW
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.config.model_targets import embedding_connection, knowledge_target
from hummingbird_agent.data_sources.direct import WorkflowFiles
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.models import Model
from hummingbird_agent.tools import ToolDef

# Tool-selection vectors live beside the incidents' collection, not in it (counts and searches stay clean).
TOOLS_COLLECTION_SUFFIX = "_tools"
NAVIGATE_SOURCE = "navigate_source"


def build_graph_store(loaded: LoadedConfig) -> CypherGraphStore:
    cfg = loaded.config.bamboo.graph
    if cfg.backend == "neo4j":
        from hummingbird_agent.bamboo.stores.neo4j_backend import Neo4jSession

        user, password = loaded.secret(cfg.user_env), loaded.secret(cfg.password_env)
        auth = (user, password) if user and password else None
        return CypherGraphStore(Neo4jSession(cfg.uri, auth, cfg.database, ca_file=loaded.ca_bundle))
    from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession

    return CypherGraphStore(LadybugSession(str(loaded.resolve(cfg.path))))


def build_embedder(loaded: LoadedConfig) -> Embedder:
    cfg = loaded.config.bamboo.embeddings
    if cfg.provider in ("gemini", "openai"):
        from hummingbird_agent.bamboo.embeddings.provider import EmbeddingSource, ProviderEmbedder
        from hummingbird_agent.models.factory import build_adapter

        connection = embedding_connection(loaded.config)
        problem = connection.missing(loaded.secret)
        if problem:
            raise ConfigError(f"bamboo.embeddings: {problem}")
        source = cast(EmbeddingSource, build_adapter(loaded, connection))
        return ProviderEmbedder(source, cfg.model, cfg.dimensions, cfg.provider)
    if cfg.provider == "minilm":
        from hummingbird_agent.bamboo.embeddings.minilm import MiniLMEmbedder

        return MiniLMEmbedder(cfg.dimensions)
    from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder

    return HashingEmbedder(cfg.dimensions)


def build_vector_store(loaded: LoadedConfig, dimensions: int | None, suffix: str = "") -> QdrantVectorStore:
    """The configured Qdrant collection, or its `suffix`ed sibling. In local mode a sibling gets its own
    folder too: one folder is locked by the client that has it open. `dimensions` None: the collection's own."""
    cfg = loaded.config.bamboo.vectors
    path = None
    if not cfg.url:
        path = cfg.path if cfg.path == ":memory:" else str(loaded.resolve(cfg.path)) + suffix
    tls = trusting(loaded.ca_bundle) if cfg.url and loaded.ca_bundle else None
    return QdrantVectorStore(cfg.collection + suffix, dimensions, url=cfg.url, path=path,
                             api_key=loaded.secret(cfg.api_key_env), tls=tls)


def build_stores(loaded: LoadedConfig) -> Stores:
    embedder = build_embedder(loaded)
    return Stores(build_graph_store(loaded), build_vector_store(loaded, embedder.dimensions), embedder)


def panda_index(loaded: LoadedConfig, kind: str) -> PandaIndex:
    """The offline PanDA `docs` or `source` index under bamboo.panda.index_dir (it may not be built yet)."""
    return PandaIndex(loaded.resolve(loaded.config.bamboo.panda.index_dir) / f"{kind}.json")


def build_panda_support(loaded: LoadedConfig) -> PandaSupport:
    """PanDA access from bamboo.panda: the adapter when a server URL is set (credentials from the named env
    vars, read here, bound into the adapter and nowhere else) and the offline indexes. No I/O."""
    from hummingbird_agent.data_sources.panda import PandaClient, PandaCredentials

    cfg = loaded.config.bamboo.panda
    client = None
    if cfg.url:
        credentials = PandaCredentials(loaded.secret(cfg.token_env) if cfg.token_env else None, cfg.auth_vo,
                                       loaded.secret(cfg.x509_proxy_env) if cfg.x509_proxy_env else None)
        ca = loaded.secret(cfg.ca_path_env) if cfg.ca_path_env else None
        client = PandaClient(cfg.url, cfg.log_url, credentials, timeout_s=cfg.timeout_s, verify=ca or True)
    help_dir = loaded.resolve(cfg.cli_help_dir) if cfg.cli_help_dir else None
    return PandaSupport(client, panda_index(loaded, "docs"), panda_index(loaded, "source"), help_dir)


def build_explorer(loaded: LoadedConfig, llm: JsonLLM, stores: Stores | None, workflow: str,
                   task_summary: TaskSummary, strategy_clients: StrategyClients | None = None,
                   ) -> ConfiguredEnricher | None:
    """The explorer of `workflow` (its data sources plus the knowledge tools and the MCP servers), or None
    when `bamboo.explore` is off or there are no stores (a dry run). Nothing is opened here."""
    cfg = loaded.config.bamboo
    if not cfg.explore or stores is None:
        return None
    tool_vectors = build_vector_store(loaded, stores.embedder.dimensions, TOOLS_COLLECTION_SUFFIX)
    return ConfiguredEnricher(loaded, llm, stores, tool_vectors, workflow, task_summary, strategy_clients)


def strategy_clients(strategy: ExtractionStrategy) -> StrategyClients:
    """The strategy's own tools for an incident (its `builtin_clients`, when it has them) and, when it has a source
    navigator, the `navigate_source` tool over it."""
    own = getattr(strategy, "builtin_clients", None)
    navigator = source_navigator_of(strategy)
    extra: list[McpClient] = [BuiltinMcpClient([_navigate_tool(navigator)], name="source")] if navigator else []
    return lambda incident: [*(own(incident) if own else ()), *extra]


def _navigate_tool(navigator: SourceNavigator) -> ToolDef:
    async def navigate_source(question: str) -> str:
        return await navigator.navigate(question)

    return ToolDef(NAVIGATE_SOURCE, "Ask the system's source code a question (where an error message is raised, "
                   "what a setting does): the matching source passages with path and line, as text.",
                   {"type": "object", "properties": {"question": {"type": "string", "maxLength": 500}},
                    "required": ["question"]}, navigate_source, read_only=True)


def build_accumulator(loaded: LoadedConfig, model: Model, stores: Stores | None,
                      extra_clients: StrategyClients | None = None) -> KnowledgeAccumulator:
    """`extra_clients(incident)`: tools of the caller beside the strategy's (the service's request_human_input)."""
    cfg = loaded.config.bamboo
    llm = JsonLLM(ModelText(model, knowledge_target(loaded.config).name))
    salt = (loaded.secret(cfg.pseudonym_salt_env) or "").encode()
    files = WorkflowFiles(loaded, ACCUMULATE_WORKFLOW)
    strategy = default_registry().create(cfg.extraction_strategy,
                                         StrategyDeps(llm, salt, files, build_panda_support(loaded)))
    explorer = build_explorer(loaded, llm, stores, ACCUMULATE_WORKFLOW, strategy.task_summary,
                              _joined(strategy_clients(strategy), extra_clients))
    return KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, stores,
                                enricher=explorer, max_review_retries=cfg.max_review_retries, tool_memory=explorer,
                                share_groups=cfg.share_groups)


def _joined(first: StrategyClients | None, second: StrategyClients | None) -> StrategyClients | None:
    if first is None or second is None:
        return first or second
    return lambda incident: [*first(incident), *second(incident)]
