"""What the AWS adapters (SQS in events/, S3 in sessions/) share: one aiobotocore client's lifecycle and the
mapping of botocore errors to our typed errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError

from hummingbird_agent.errors import ConfigError, PermanentError, TransientError
from hummingbird_agent.lifecycle import ClientState

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


class AwsClient:
    """One aiobotocore client of `service`, opened in start() and closed in aclose(); `client` is the SDK's."""

    def __init__(self, service: str, region: str, endpoint_url: str | None) -> None:
        self._service, self._region, self._endpoint_url = service, region, endpoint_url
        self._stack = contextlib.AsyncExitStack()
        self.client: Any = None
        self.state = ClientState.UNOPENED

    async def start(self) -> None:
        creator = get_session().create_client(self._service, region_name=self._region, endpoint_url=self._endpoint_url)
        self.client = await self._stack.enter_async_context(creator)
        self.state = ClientState.OPEN

    async def aclose(self) -> None:
        await self._stack.aclose()
        self.state = ClientState.CLOSED
