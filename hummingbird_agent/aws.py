"""What the AWS adapters (SQS in events/, S3 in sessions/) share: one aiobotocore client's lifecycle and the
mapping of botocore errors to our typed errors."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError

from hummingbird_agent import budgets
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError
from hummingbird_agent.lifecycle import ClientState

logger = logging.getLogger(__name__)

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
        config = AioConfig(
            connect_timeout=budgets.AWS_CONNECT_TIMEOUT_S,
            read_timeout=budgets.AWS_READ_TIMEOUT_S,
            retries={"mode": "standard", "total_max_attempts": budgets.AWS_MAX_ATTEMPTS},
        )
        creator = get_session().create_client(
            self._service, region_name=self._region, endpoint_url=self._endpoint_url, config=config
        )
        self.client = await self._stack.enter_async_context(creator)
        # Emitted after every attempt, before botocore decides whether to retry it.
        self.client.meta.events.register(f"needs-retry.{self._service}", log_failed_attempt)
        self.state = ClientState.OPEN

    async def aclose(self) -> None:
        await self._stack.aclose()
        self.state = ClientState.CLOSED


def log_failed_attempt(
    attempts: int = 0,
    operation: Any = None,
    request_dict: dict[str, Any] | None = None,
    response: Any = None,
    caught_exception: BaseException | None = None,
    **_: Any,
) -> None:
    """WARNING per failed attempt with the status (or the connection error), the operation, the URL path
    without its query string (presigned URLs carry credentials there) and the attempt number. Returns
    None: the retry decision stays botocore's."""
    status = response[0].status_code if response else None
    if caught_exception is None and (status is None or status < 400):
        return
    path = str((request_dict or {}).get("url_path", "")).split("?", 1)[0]
    cause = f"status {status}" if status is not None else type(caught_exception).__name__
    name = getattr(operation, "name", "?")
    service = getattr(getattr(operation, "service_model", None), "service_id", "?")
    logger.warning("%s %s failed: %s, path %s, attempt %d", service, name, cause, path or "/", attempts)
