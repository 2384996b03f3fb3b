"""`run --post`: the note of a terminal run posted to its MR by the bot, with a session marker."""

from __future__ import annotations

from hummingbird_agent.agent.command import Poster
from hummingbird_agent.agent.run import RunRequest
from hummingbird_agent.config import LoadedConfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.markers import SessionMarker, parse_markers
from hummingbird_agent.runner.posting import requires_internal


def make_poster(loaded: LoadedConfig, workflow: str) -> Poster:
    """A poster using the bot token; ConfigError now (before the run) when the token is not set or the
    workflow's `action` is `none` (its results are never posted)."""
    cfg = loaded.config.gitlab
    spec = loaded.config.workflows.get(workflow)
    if spec is not None and spec.action == "none":
        raise ConfigError(f"--post: workflow {workflow!r} has `action: none`, so its results are not posted")
    token = loaded.secret(cfg.token_env)
    if token is None:
        raise ConfigError(f"--post needs the bot token in {cfg.token_env}")

    async def post(request: RunRequest, note: str, ok: bool) -> None:
        marker = SessionMarker(id=request.session_id or "", wf=request.workflow)
        body = note_text.result_body(note, marker, reply_prompt=True) if ok else note_text.failure_body(marker, note)
        internal = requires_internal(loaded.config, request.project, request.workflow)
        client = GitLabClient(cfg.url, token)
        await client.open()
        try:
            await client.post_note_once(request.project, request.mr_iid, body, discussion_id=None,
                                        internal=internal, is_mine=lambda text: marker in parse_markers(text))
        finally:
            await client.aclose()

    return post
