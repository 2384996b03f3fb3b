"""Session persistence: context.json, transcript.md and sandbox.tar.gz per session, behind one interface."""

from hummingbird_agent.sessions.base import SessionStore, StoredSession, validate_session_id
from hummingbird_agent.sessions.local import LocalSessionStore, load_directory, save_directory

__all__ = [
    "LocalSessionStore",
    "SessionStore",
    "StoredSession",
    "load_directory",
    "save_directory",
    "validate_session_id",
]
