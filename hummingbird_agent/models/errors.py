"""Typed model errors every adapter maps its SDK's exceptions to; the loop and the retry see only these."""

from __future__ import annotations

from hummingbird_agent.errors import PermanentError, TransientError


class ModelUnavailable(TransientError):
    """A 5xx or a transport failure: retry with backoff."""


class ModelRateLimited(TransientError):
    """HTTP 429. `retry_after_s` is the provider's Retry-After, None when it sent none."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ModelOverloaded(TransientError):
    """The provider is overloaded (Anthropic 529, a 503): retry with backoff."""


class ModelTimedOut(TransientError):
    """A streamed answer went silent (no event within the first-event or silence limit) or ran past the total
    ceiling. Retried on hosted APIs; on a self-hosted server it is not (the retry would generate from zero)."""


class ModelContextTooLong(PermanentError):
    """The prompt exceeds the model's context window; retrying the same request cannot help."""


class ModelAuthError(PermanentError):
    """The key or credentials were refused (401/403): the operator must fix the configuration."""


class ModelBadRequest(PermanentError):
    """The provider refused the request as malformed (400/404/422)."""


def classify_status(status: int, message: str, retry_after_s: float | None = None) -> Exception:
    """The typed error of an HTTP status from a model API (used by every adapter)."""
    lowered = message.lower()
    if status == 429:
        return ModelRateLimited(message, retry_after_s)
    if status in (529, 503) or "overloaded" in lowered:
        return ModelOverloaded(message)
    if status >= 500 or status == 408:
        return ModelUnavailable(message)
    if status in (401, 403):
        return ModelAuthError(message)
    if status == 413 or any(s in lowered for s in _TOO_LONG):
        return ModelContextTooLong(message)
    return ModelBadRequest(message)


# How each provider says "too long" in a 400: Anthropic, OpenAI (code and message), Gemini, vLLM, Ollama.
_TOO_LONG = ("prompt is too long", "context_length_exceeded", "maximum context length", "input token count",
             "exceeds the maximum", "context window", "too many tokens")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms as "<n>ms") header; None when absent or a date."""
    if not value:
        return None
    try:
        if value.endswith("ms"):
            return max(0.0, float(value[:-2]) / 1000)
        return max(0.0, float(value))
    except ValueError:
        return None
