"""Error mapping shared by the AWS adapters (SQS in events/, S3 in sessions/): botocore -> our typed errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from botocore.exceptions import BotoCoreError, ClientError

from hummingbird_agent.errors import ConfigError, PermanentError, TransientError

AUTH_CODES = frozenset({
    "AccessDenied", "InvalidAccessKeyId", "InvalidClientTokenId", "SignatureDoesNotMatch",
    "UnrecognizedClientException", "403",
})


@contextlib.contextmanager
def map_aws_errors(what: str, permanent_codes: frozenset[str] = frozenset()) -> Iterator[None]:
    """ClientError -> ConfigError (credentials), PermanentError (`permanent_codes`) or TransientError; any other
    botocore failure (connection, timeout) -> TransientError. `what` names the call, e.g. "SQS send on q"."""
    try:
        yield
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
        message = f"{what}: {code}"
        if code in AUTH_CODES:
            raise ConfigError(message + " (check AWS credentials and policies)") from exc
        if code in permanent_codes:
            raise PermanentError(message) from exc
        raise TransientError(message) from exc
    except BotoCoreError as exc:
        raise TransientError(f"{what}: {type(exc).__name__}") from exc
