"""The config.yaml schema: one pydantic model per component, composed into `Config`; the knowledge base's
section is in knowledge.py.

Every field has a docstring with its unit (the config reference in docs/configuration.md is generated from
them). Loading, validation messages and environment overrides live in loading.py, which re-exports the
service's sections.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, field_validator, model_validator

from hummingbird_agent import budgets
from hummingbird_agent.config.fields import (
    StrictModel,
    compiled_regexes,
    number,
    require_for_backend,
    url_path,
    whole,
)
from hummingbird_agent.config.knowledge import BambooConfig
from hummingbird_agent.config.providers import ModelConfig, WorkflowModel
from hummingbird_agent.config.triage import TriageConfig

_MiB = 1024 * 1024
_GiB = 1024 * _MiB


class GitLabConfig(StrictModel):
    url: str = "https://gitlab.com"
    """Base URL of the GitLab instance."""
    token_env: str = "HUMMINGBIRD_GITLAB_TOKEN"
    """Env var holding the bot's (orchestrator) token: notes, discussions, member checks."""
    marker_secret_env: str | None = None
    """Env var holding the key that signs the markers of the bot's notes (HMAC); unset derives one from the bot's
    token (signatures then change when the token is rotated)."""
    bot_username: str | None = None
    """Informational only; the bot is identified by the token's `/user` id, never by name."""
    request_timeout_s: Annotated[float, number(0.1, 600, "seconds")] = budgets.GITLAB_REQUEST_TIMEOUT_S
    """Connect and read timeout of one request of the bot's client."""
    write_settle_s: Annotated[float, number(0, 3600, "seconds")] = budgets.GITLAB_WRITE_SETTLE_S
    """How long after an unanswered note POST its note may still appear (GitLab's request limit plus a
    margin); the note is looked for until then before the POST is repeated."""


class TriggerRule(StrictModel):
    include: tuple[str, ...] = ()
    """Patterns that must match (empty: everything matches). Globs for users/branches, regexes for titles."""
    exclude: tuple[str, ...] = ()
    """Patterns that reject the event even when `include` matched."""


class TriggerRules(StrictModel):
    statuses: tuple[str, ...] = ("failed",)
    """Pipeline statuses that trigger an automatic run (pipeline events only)."""
    users: TriggerRule = TriggerRule()
    """Usernames (globs) of the MR author / pipeline user."""
    branches: TriggerRule = TriggerRule()
    """Target branch names (globs)."""
    title: TriggerRule = TriggerRule()
    """MR title regexes, e.g. exclude `\\[skip hummingbird\\]`; each must compile (checked at load)."""

    @field_validator("title")
    @classmethod
    def _title_regexes_compile(cls, value: TriggerRule) -> TriggerRule:
        compiled_regexes(value.include + value.exclude)
        return value


class ProjectConfig(StrictModel):
    max_runs_per_mr: Annotated[int, whole(0, 1000, "threads")] = 5
    """Threads one workflow may open on one MR automatically (commands and replies are not counted)."""
    internal_notes: bool = False
    """Post internal (confidential) notes; replies to public threads become new internal notes."""
    trigger_rules: TriggerRules = TriggerRules()
    """Which automatic events run the workflow on this project."""
    learn_on_success: bool = False
    """Bamboo: learn an incident automatically when a failed MR pipeline later succeeds."""
    knowledge_tools: bool = False
    """Bamboo: expose the knowledge base as tools to this project's analyses."""
    gitlab_token_env: str | None = None
    """Env var holding this project's GitLab read token; unset uses the workflow's `data_sources.gitlab.token_env`."""
    konflux_kubeconfig_env: str | None = None
    """Env var holding the path of this project's Konflux kubeconfig; unset uses the workflow's
    `data_sources.konflux.kubeconfig_env`."""


class GitLabSourceConfig(StrictModel):
    token_env: str = "GITLAB_READ_TOKEN"
    """Env var holding the read token the GitLab tools use (not the bot's write token)."""


class KonfluxSourceConfig(StrictModel):
    cluster_url: str
    """Konflux cluster URL; the UI and PipelineRun links derive from its domain."""
    kubeconfig_env: str = "KONFLUX_KUBECONFIG"
    """Env var holding the kubeconfig file path (API server and bearer token)."""
    kubearchive_url: str | None = None
    """Kubearchive base URL for completed resources; None queries only the live API."""


class TestingFarmSourceConfig(StrictModel):
    api_url: str = "https://api.testing-farm.io"
    """Testing Farm API base URL."""
    artifacts_base: str = "https://artifacts.osci.redhat.com/testing-farm"
    """The only prefix test logs may be fetched from (SSRF guard)."""


class DataSourcesConfig(StrictModel):
    gitlab: GitLabSourceConfig | None = None
    konflux: KonfluxSourceConfig | None = None
    testing_farm: TestingFarmSourceConfig | None = None

    def declared(self) -> list[str]:
        """Names of the sources this workflow declares, in a stable order."""
        return [name for name in ("gitlab", "konflux", "testing_farm") if getattr(self, name) is not None]


class WorkflowConfig(StrictModel):
    description: str
    """One line shown by `/hummingbird help`."""
    prompt: str
    """Markdown system-prompt layer, relative to the config file's directory."""
    action: Literal["note", "none"] = "note"
    """What to do with the final text: post it as an MR note, or nothing (print only)."""
    triggers: tuple[Literal["pipeline", "merge_request"], ...] = ()
    """Events that run the workflow automatically; empty means only `/hummingbird <name>`."""
    model: str | WorkflowModel | None = None
    """Model name passed to the provider (default `model.name`), or a mapping with `name` and any
    ModelConnection key to run this workflow elsewhere (a cheaper model, another provider)."""
    max_iterations: Annotated[int, whole(1, 1000, "model turns")] = budgets.DEFAULT_MAX_ITERATIONS
    """Model turns per run."""
    data_sources: DataSourcesConfig = DataSourcesConfig()
    """Sources whose tools this workflow may use; undeclared sources never reach the tool list."""
    projects: dict[str, ProjectConfig] = {}
    """Allowlist: project path -> per-project settings. A project not listed never runs this workflow."""
    require_data: bool = False
    """An analysis: an answer given before any data-source call succeeded is sent back once to read the data,
    and a second one is posted under a first line saying no data was read (on in the shipped config.yaml)."""
    engine: Literal["agent", "bamboo-accumulate", "bamboo-diagnose", "bamboo-investigate"] = "agent"
    """What runs the workflow: the agent loop in a sandbox, or the knowledge base (learn / diagnose an MR's
    failure, or `investigate` in the MR thread; these need `bamboo.enabled`)."""
    triage: TriageConfig = TriageConfig()
    """Verdicts on each failed check before the model runs (agent workflows with the GitLab data source)."""

    @model_validator(mode="after")
    def _triage_reads_gitlab(self) -> WorkflowConfig:
        if self.triage.enabled and (self.engine != "agent" or self.data_sources.gitlab is None):
            raise ValueError("triage.enabled needs engine: agent and the gitlab data source (it reads pipelines, "
                             "jobs and logs with the read token)")
        return self

    @model_validator(mode="after")
    def _project_credentials_have_a_source(self) -> WorkflowConfig:
        for path, project in self.projects.items():
            for source, key in (("gitlab", "gitlab_token_env"), ("konflux", "konflux_kubeconfig_env")):
                if getattr(project, key) and getattr(self.data_sources, source) is None:
                    raise ValueError(f"projects.{path}.{key}: the workflow declares no {source} data source")
        return self


class QueuesConfig(StrictModel):
    backend: Literal["embedded", "sqs"] = "embedded"
    """`embedded` is a durable SQLite queue on this machine; `sqs` uses AWS SQS (or a compatible endpoint)."""
    ingress_url: str | None = None
    """SQS standard queue receiving SNS notifications (sqs backend)."""
    work_url: str | None = None
    """SQS FIFO work queue (sqs backend)."""
    endpoint_url: str | None = None
    """Custom SQS endpoint (overridden by AWS_ENDPOINT_URL)."""
    region: str = "us-east-1"
    """AWS region."""
    embedded_path: str = "var/queue.sqlite"
    """SQLite file of the embedded queue, relative to the config file."""
    max_concurrent_agents: Annotated[int, whole(1, 1000, "message groups")] = 4
    """Message groups processed in parallel by one worker."""
    visibility_timeout_s: Annotated[int, whole(1, 43_200, "seconds")] = budgets.VISIBILITY_TIMEOUT_S
    """Visibility timeout of received messages, seconds; a heartbeat extends it while a handler runs."""
    heartbeat_interval_s: Annotated[float, number(0.01, 21_600, "seconds")] = budgets.HEARTBEAT_INTERVAL_S
    """Seconds between visibility extensions of in-flight messages; must be under visibility_timeout_s / 2."""
    wait_time_s: Annotated[int, whole(0, 20, "seconds")] = budgets.LONG_POLL_WAIT_S
    """Long-poll wait of one receive, seconds (SQS maximum 20)."""
    max_receives: Annotated[int, whole(1, 1000, "receives")] = budgets.MAX_RECEIVES
    """Embedded backend: receives before a message moves to the dead-letter queue (SQS: the RedrivePolicy)."""
    shutdown_grace_s: Annotated[float, number(0, 86_400, "seconds")] = budgets.SHUTDOWN_GRACE_S
    """On SIGTERM, seconds in-flight handlers may run before they are cancelled."""

    @model_validator(mode="after")
    def _heartbeat_renews_in_time(self) -> QueuesConfig:
        if self.heartbeat_interval_s >= self.visibility_timeout_s / 2:
            raise ValueError(
                f"heartbeat_interval_s ({self.heartbeat_interval_s:g} s) must be under half of visibility_timeout_s "
                f"({self.visibility_timeout_s} s), or a running message reappears before it is renewed"
            )
        return self


class WebhookConfig(StrictModel):
    enabled: bool = True
    """Serve the GitLab webhook endpoint (single-machine mode, or teams without SNS)."""
    host: str = "127.0.0.1"
    """Bind address."""
    port: Annotated[int, whole(0, 65535, "(TCP port)")] = 8080
    """Bind port (0 picks a free one)."""
    secret_env: str = "GITLAB_WEBHOOK_SECRET"
    """Env var holding the X-Gitlab-Token value webhooks must carry."""
    path: Annotated[str, AfterValidator(url_path)] = "/webhook"
    """URL path GitLab posts to; starts with `/`."""
    max_body_bytes: Annotated[int, whole(1024, budgets.ENVELOPE_MAX_DECODED_BYTES, "bytes")] = (
        budgets.WEBHOOK_MAX_BODY_BYTES
    )
    """Largest accepted webhook body, bytes; larger ones get 413."""


class SessionsConfig(StrictModel):
    backend: Literal["local", "s3"] = "local"
    """Where session state (context.json, transcript.md, sandbox.tar.gz) is kept."""
    directory: str = "var/sessions"
    """Local backend: directory, relative to the config file."""
    s3_bucket: str | None = None
    """S3 backend: bucket name."""
    s3_prefix: str = "sessions/"
    """S3 backend: key prefix."""
    max_age_days: Annotated[int, whole(0, 36_500, "days")] = budgets.SESSION_MAX_AGE_DAYS
    """Days after its last save that a session expires (a reply to it then gets a note saying so); 0 keeps
    sessions forever. The local backend is swept at start-up and hourly by `serve`; for S3 the bucket's lifecycle rule
    expires them (docs/operations.md)."""

    @model_validator(mode="after")
    def _bucket_for_s3(self) -> SessionsConfig:
        require_for_backend(self, "s3", "s3_bucket")
        return self


class SandboxConfig(StrictModel):
    backend: Literal["podman", "k8s", "k8s-pool"] = "podman"
    """Where model-requested commands run."""
    image: str = "localhost/hummingbird-sandbox:latest"
    """Sandbox image (jq, python3, yq, tar, gzip)."""
    podman_binary: str = "podman"
    """Podman backend: the podman executable (name on PATH or absolute path)."""
    memory_bytes: Annotated[int, whole(64 * _MiB, 256 * _GiB, "bytes")] = budgets.SANDBOX_MEMORY_BYTES
    """Memory limit of one sandbox, bytes; the working-directory tmpfs counts against it."""
    workdir_bytes: Annotated[int, whole(_MiB, 1024 * _GiB, "bytes")] = budgets.SANDBOX_WORKDIR_BYTES
    """Size cap of the /tmp/data working directory (tmpfs size / emptyDir sizeLimit), bytes."""
    pids_limit: Annotated[int, whole(8, 65_536, "processes")] = budgets.SANDBOX_PIDS_LIMIT
    """Maximum number of processes in one sandbox."""
    cpus: Annotated[float, number(0.01, 256, "cores")] = budgets.SANDBOX_CPUS
    """CPU limit of one sandbox, cores."""
    namespace: str = "hummingbird-sandbox"
    """Kubernetes backends: namespace of the sandbox pods (where kubernetes/rbac.yaml is applied)."""
    kubeconfig: str | None = None
    """Kubernetes backends: kubeconfig path; None uses the in-cluster service account."""
    run_as_user: Annotated[int | None, whole(0, 2**31 - 1, "(uid)", optional=True)] = 65532
    """Kubernetes backends: pod uid; null lets OpenShift's restricted-v2 SCC assign one."""
    pool_claim_wait_s: Annotated[float, number(0, 3600, "seconds")] = budgets.SANDBOX_POOL_CLAIM_WAIT_S
    """Pool backend: seconds to wait for a Ready standby pod before creating a pod directly."""


class Config(StrictModel):
    gitlab: GitLabConfig = GitLabConfig()
    model: ModelConfig = ModelConfig()
    queues: QueuesConfig = QueuesConfig()
    webhook: WebhookConfig = WebhookConfig()
    sessions: SessionsConfig = SessionsConfig()
    sandbox: SandboxConfig = SandboxConfig()
    bamboo: BambooConfig = BambooConfig()
    workflows: dict[str, WorkflowConfig]
    """Workflow name -> settings. Names are used in `/hummingbird <name>`."""

    @field_validator("workflows")
    @classmethod
    def _names_are_commands(cls, value: dict[str, WorkflowConfig]) -> dict[str, WorkflowConfig]:
        for name in value:
            if not name or not all(c.isalnum() or c in "-_" for c in name) or name == "help":
                raise ValueError(f"workflow name {name!r} must be letters, digits, '-' or '_' and not 'help'")
        return value
