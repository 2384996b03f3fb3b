"""The service's signature on the markers it writes: an HMAC-SHA256 keyed by a per-deployment secret, so a
marker is read as the service's only when it carries a MAC no one else can compute. A marker typed by a
user, printed by a job log, answered by a model or copied from another MR does not verify."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from hummingbird_agent import budgets

# The label that turns the bot's token into a marker key when no marker secret is configured: the key
# then changes with the token (see docs/security.md, "Markers").
_DERIVED_LABEL = b"hummingbird-agent marker key v1"


@dataclass(frozen=True, slots=True)
class Seal:
    """Signs and verifies marker fields; `scope` binds every MAC to one place (an MR), so a marker copied
    from one MR's note into another's does not verify."""

    key: bytes = field(repr=False)
    scope: str = ""

    @staticmethod
    def from_secrets(marker_secret: str | None, bot_token: str) -> Seal:
        """The configured marker secret's key; without one, a key derived from the bot's token (every
        replica holds it, nobody outside the deployment does)."""
        if marker_secret:
            return Seal(marker_secret.encode("utf-8"))
        return Seal(hmac.new(bot_token.encode("utf-8"), _DERIVED_LABEL, hashlib.sha256).digest())

    def within(self, scope: str) -> Seal:
        return Seal(self.key, scope)

    def mac(self, *fields: object) -> str:
        text = "\x1f".join([self.scope, *(str(f) for f in fields)])
        digest = hmac.new(self.key, text.encode("utf-8"), hashlib.sha256).hexdigest()
        return digest[: budgets.MARKER_MAC_HEX_CHARS]

    def verify(self, mac: object, *fields: object) -> bool:
        return isinstance(mac, str) and hmac.compare_digest(mac, self.mac(*fields))
