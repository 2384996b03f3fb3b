"""python-gitlab's and requests' exceptions as our typed errors, in one place for every GitLab client (the bot's
adapter and the read-token data source), with the call as context."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import gitlab.exceptions as glexc
import requests

from hummingbird_agent.errors import OutcomeUnknown, PermanentError, TransientError


@contextlib.contextmanager
def map_gitlab_errors(context: str) -> Iterator[None]:
    """python-gitlab and transport errors -> TransientError (retry) or PermanentError, with context."""
    try:
        yield
    except glexc.GitlabError as exc:
        code = getattr(exc, "response_code", None) or 0
        kind = TransientError if code == 429 or code >= 500 or code == 0 else PermanentError
        # A gateway timeout answers for GitLab, which may still be working on the request.
        kind = OutcomeUnknown if code == 504 else kind
        raise kind(f"GitLab {context}: HTTP {code or 'error'}: {short(exc.error_message)}") from exc
    except requests.exceptions.ReadTimeout as exc:  # sent, then no answer: GitLab may still carry it out
        raise OutcomeUnknown(f"GitLab {context}: {type(exc).__name__}") from exc
    except (OSError, ConnectionError) as exc:  # requests' errors derive from OSError
        raise TransientError(f"GitLab {context}: {type(exc).__name__}") from exc


def short(message: Any) -> str:
    """One line of at most 200 characters, for an error message."""
    return str(message).replace("\n", " ")[:200]
