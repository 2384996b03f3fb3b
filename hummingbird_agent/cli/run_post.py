"""`run` and GitLab: the MR read before the run (with the token the run reads GitLab with), and `--post`: the
note of a terminal run posted to its MR by the bot, with a session marker."""

from __future__ import annotations

from hummingbird_agent.agent.run import RunRequest
from hummingbird_agent.cli.run import MrCheck, Poster
from hummingbird_agent.config.credentials import source_env
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import GitLabClient, MrHead
from hummingbird_agent.gitlab.markers import SessionMarker, parse_markers
from hummingbird_agent.observability import Redactor
from hummingbird_agent.runner.posting import requires_internal


def make_poster(loaded: LoadedConfig, workflow: str, keeps_session: bool = False) -> Poster:
    """A poster using the bot token; the note invites a reply only when the run keeps its session (a knowledge-base
    note never does). ConfigError now (before the run) when the token is not set or the workflow's `action` is
    `none` (its results are never posted)."""
    cfg = loaded.config.gitlab
    spec = loaded.config.workflows.get(workflow)
    if spec is not None and spec.action == "none":
        raise ConfigError(f"--post: workflow {workflow!r} has `action: none`, so its results are not posted")
    token = loaded.secret(cfg.token_env)
    if token is None:
        raise ConfigError(f"--post needs the bot token in {cfg.token_env}")
    redact = Redactor(loaded.secret_values())  # the note is redacted like the service's notes

    # Only kept agent sessions can be continued by a reply (as in the service); the knowledge-base engines keep none.
    conversational = (spec is None or spec.engine == "agent") and keeps_session

    async def post(request: RunRequest, note: str, ok: bool) -> None:
        marker = SessionMarker(id=request.session_id or "", wf=request.workflow)
        body = (note_text.result_body(note, marker, reply_prompt=conversational) if ok
                else note_text.failure_body(marker, note))
        internal = requires_internal(loaded.config, request.project, request.workflow)
        client = GitLabClient(cfg.url, token, cfg.request_timeout_s, settle_s=cfg.write_settle_s, redact=redact)
        await client.open()
        try:
            await client.post_note_once(request.project, request.mr_iid, body, discussion_id=None,
                                        internal=internal, is_mine=lambda text: marker in parse_markers(text))
        finally:
            await client.aclose()

    return post


def make_mr_check(loaded: LoadedConfig, workflow: str, post: bool) -> MrCheck:
    """check(project, iid): the MR's project id and head commit; PermanentError (one line naming the project,
    the MR and what is wrong, never a token) when the MR cannot be read. It reads with the bot token under
    --post (the bot posts there), else with the project's GitLab read token (the one its tools use), else the
    bot's, else anonymously."""
    url = loaded.config.gitlab.url

    async def check(project: str, iid: int) -> MrHead:
        env = _reader_env(loaded, workflow, project, post)
        who = f"the token in {env}" if env else "an anonymous request (no GitLab token is set)"
        client = GitLabClient(url, (loaded.secret(env) if env else None) or "")
        await client.open()
        try:
            found = await client.read_mr(project, iid)
        except TransientError as exc:  # retried already: GitLab is unreachable or failing
            raise TransientError(f"cannot run {workflow} on {project} !{iid}: {exc}") from None
        finally:
            await client.aclose()
        if not isinstance(found, MrHead):
            raise PermanentError(f"cannot run {workflow} on {project} !{iid}: {_why(found, project, iid, who)}")
        return found

    return check


def _reader_env(loaded: LoadedConfig, workflow: str, project: str, post: bool) -> str | None:
    bot = loaded.config.gitlab.token_env
    spec = loaded.config.workflows.get(workflow)
    source = source_env(spec, project, "gitlab") if spec is not None else None
    candidates = [bot] if post else [source.env if source is not None else None, bot]
    return next((env for env in candidates if env and loaded.secret(env)), None)


def _why(problem: tuple[str, int], project: str, iid: int, who: str) -> str:
    what, status = problem
    if status == 401:
        return f"GitLab refused {who} (HTTP 401)"
    target = f"project {project}" if what == "project" else f"merge request !{iid}"
    if status == 403:
        return f"{who} may not read {target} (HTTP 403)"
    if what == "project":
        return f"{target} not found, or not visible to {who} (HTTP 404)"
    return f"{target} not found in {project} (HTTP 404)"
