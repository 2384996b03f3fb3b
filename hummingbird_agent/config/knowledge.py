"""The knowledge base's (Bamboo) config section, `bamboo` in config.yaml: the LLM it calls, its graph and vector
stores, its embeddings and the panda strategy's PanDA access. Field docstrings follow the rules of schema.py,
which composes this section into `Config`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import field_validator, model_validator

from hummingbird_agent import budgets
from hummingbird_agent.config.fields import Provider, StrictModel, number, require_for_backend, whole


class GraphStoreConfig(StrictModel):
    backend: Literal["embedded", "neo4j"] = "embedded"
    """`embedded` needs no server; `neo4j` connects to `uri`."""
    path: str = "var/graph"
    """Embedded store location, relative to the config file."""
    uri: str | None = None
    """Neo4j bolt/neo4j URI."""
    user_env: str = "NEO4J_USER"
    """Env var holding the Neo4j user."""
    password_env: str = "NEO4J_PASSWORD"
    """Env var holding the Neo4j password."""
    database: str | None = None
    """Neo4j database name; None uses the server's default database."""

    @model_validator(mode="after")
    def _uri_for_neo4j(self) -> GraphStoreConfig:
        require_for_backend(self, "neo4j", "uri")
        return self


class VectorStoreConfig(StrictModel):
    url: str | None = None
    """Qdrant server URL; None uses Qdrant local mode at `path`."""
    path: str = "var/qdrant"
    """Local-mode directory, relative to the config file."""
    api_key_env: str = "QDRANT_API_KEY"
    """Env var holding the Qdrant API key (server mode)."""
    collection: str = "bamboo"
    """Collection name; sections live in the payload."""


class EmbeddingsConfig(StrictModel):
    provider: Literal["hashing", "gemini", "openai", "minilm"] = "hashing"
    """`gemini` (API key or Vertex AI) or `openai` (any OpenAI-compatible endpoint, Ollama included) in
    production, `minilm` offline, `hashing` deterministic (tests, no model). Anthropic has no embeddings: a
    Claude deployment names one of these."""
    model: str = "gemini-embedding-001"
    """Embedding model name for the gemini / openai provider (e.g. text-embedding-3-small, nomic-embed-text)."""
    api_key_env: str | None = None
    """Env var of the embedding provider's key; default: the `model` section's when it is the same provider."""
    base_url: str | None = None
    """Embedding endpoint; default: the `model` section's when it is the same provider."""
    dimensions: Annotated[int, whole(1, 65_536, "vector components")] = 384
    """Vector size. Changing it, the provider or the model needs `bamboo reindex` (stored vectors are only
    comparable with the embedder that made them)."""


class PandaConfig(StrictModel):
    """The panda strategy's PanDA access and offline indexes; credentials are named env vars, never values."""

    url: str | None = None
    """PanDA server API base, e.g. https://pandaserver.cern.ch:25443/api/v1; None: no PanDA server tools."""
    log_url: str | None = None
    """Base serving job logs as <log_url>/<PandaID>/<file> (payload.stdout); None: no job-log tools."""
    token_env: str | None = None
    """Env var holding the user's OIDC ID token (sent as a Bearer header)."""
    auth_vo: str | None = None
    """The VO sent as the Origin header with the OIDC token (PanDA's PANDA_AUTH_VO)."""
    x509_proxy_env: str | None = None
    """Env var holding the path of the user's X.509 proxy file (client certificate and key)."""
    ca_path_env: str | None = None
    """Env var holding a CA bundle file or directory to verify the server; unset: the system's."""
    timeout_s: Annotated[float, number(0.1, 3600, "seconds")] = budgets.PANDA_HTTP_TIMEOUT_S
    """Seconds per PanDA request."""
    index_dir: str = "var/panda_index"
    """Where `bamboo index-docs/index-source` store the offline indexes, relative to the config file."""
    cli_help_dir: str | None = None
    """Folder of prun.txt / pathena.txt (their --help text) for fetch_cli_options, relative to the config."""


def _share_groups(groups: list[list[str]]) -> list[list[str]]:
    """Each group two or more distinct project paths (group/name), none blank."""
    for at, group in enumerate(groups):
        if len(set(group)) < 2 or len(set(group)) != len(group):
            raise ValueError(f"share_groups[{at}]: give two or more distinct project paths")
        for path in group:
            if "/" not in path.strip("/") or path != path.strip() or path.strip("/") != path:
                raise ValueError(f"share_groups[{at}]: {path!r} is not a project path (group/name)")
    return groups


class BambooConfig(StrictModel):
    enabled: bool = False
    """Turn the knowledge base on."""
    extraction_strategy: str = "gitlab_ci"
    """Active extraction strategy (EXTRACTION_STRATEGY overrides)."""
    provider: Provider | None = None
    """Provider of the knowledge base's calls (LLM_PROVIDER overrides); default `model.provider`, served
    with the `model` section's connection when it is the same provider."""
    model: str | None = None
    """Model of extraction, review and diagnosis calls (LLM_MODEL overrides); default gemini-2.5-flash /
    claude-haiku-4-5 / gpt-4.1-mini."""
    base_url: str | None = None
    """Endpoint of the knowledge base's provider when it is not the `model` section's one."""
    api_key_env: str | None = None
    """Env var of that provider's key when it is not the `model` section's one."""
    max_output_tokens: Annotated[int | None, whole(1, 1_000_000, "tokens", optional=True)] = None
    """Output tokens of one knowledge-base call; default as `model.max_output_tokens` (its value when the
    connection is the `model` section's)."""
    max_review_retries: Annotated[int, whole(0, 100, "retries")] = budgets.BAMBOO_MAX_REVIEW_RETRIES
    """Re-extractions after reviewer rejections; when the last one is rejected too, the best result is stored
    with a warning (`bamboo populate --max-retries` overrides it per run)."""
    pseudonym_salt_env: str = "BAMBOO_PSEUDONYM_SALT"
    """Env var holding the salt of pseudonymised identity fields (panda strategy); unset means no salt."""
    exploratory_threshold: Annotated[float, number(0, 1, "(confidence)")] = 0.5
    """Diagnosis confidence below which exploratory investigation runs."""
    mcp_servers_config: str | None = None
    """Path of the external MCP servers JSON (MCP_SERVERS_CONFIG overrides)."""
    explore: bool = False
    """Run the ContextEnricher: on the accumulator's first rejection and in the navigator's exploratory and
    procedure hooks. Off by default because its orchestration code runs in the sandbox (Podman or
    Kubernetes); when off, `bamboo populate/analyze` need no sandbox and the hooks report no explorer."""
    llm_context_window: Annotated[int, whole(0, 100_000_000, "tokens")] = 0
    """Context window the explorer's tool block is fitted into (LLM_CONTEXT_WINDOW overrides); 0: the window the
    model's server reports (Ollama), else 128000."""
    tool_budget_margin: Annotated[int, whole(0, 10_000_000, "tokens")] = budgets.TOOL_BUDGET_MARGIN
    """Tokens kept free for the answer when fitting the tool block (TOOL_BUDGET_MARGIN overrides)."""
    tool_max_full_schemas: Annotated[int, whole(1, 100_000, "tools")] = budgets.TOOL_MAX_FULL_SCHEMAS
    """At most this many tools get a full JSON schema in an exploration prompt, the rest a one-line summary
    (TOOL_MAX_FULL_SCHEMAS overrides)."""
    tool_retrieval_candidate_k: Annotated[int, whole(0, 1_000_000, "tools")] = 0
    """Ranking pool of tool retrieval (TOOL_RETRIEVAL_CANDIDATE_K overrides); 0: max(40, 3 x
    tool_max_full_schemas)."""
    tool_reserved_explore: Annotated[int, whole(0, 100_000, "tools")] = budgets.TOOL_RESERVED_EXPLORE
    """Full-schema slots kept for tools whose descriptions match the symptom, so new tools are not crowded out by
    those past investigations used; at most tool_max_full_schemas (TOOL_RESERVED_EXPLORE overrides)."""
    investigate_auto_run_read_only: bool = True
    """In `investigate`, run proposed code that calls only read-only tools at once; false: every proposal
    waits for `approve`. Code calling a state-changing tool always waits."""
    investigate_require_other_approver: bool = False
    """In an `investigate` MR thread, code a human wrote (a reply with a corrected block) runs only when someone
    other than that GitLab user approves it; the planner's code, and the terminal (one operator), are unaffected."""
    share_groups: list[list[str]] = []
    """Groups of project paths (group/name) that read each other's learned knowledge; a project in no group reads
    only what was learned from its own failures (a project in several groups reads all of them)."""
    graph: GraphStoreConfig = GraphStoreConfig()
    vectors: VectorStoreConfig = VectorStoreConfig()
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    panda: PandaConfig = PandaConfig()

    @field_validator("share_groups")
    @classmethod
    def _groups_are_paths(cls, value: list[list[str]]) -> list[list[str]]:
        return _share_groups(value)
