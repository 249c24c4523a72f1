"""Errors of an LLM call. Each is an error for the item that made the call, never a score.

Every message is built by this package from redacted parts: the base URL without credentials
or query, the status, and a scrubbed excerpt of the server's own error text. No error keeps a
reference to an HTTP request or response object (the request's headers carry the key).
"""

from __future__ import annotations

from typing import Any


class LLMError(Exception):
    """Base class. `kind` is a short stable label for counting; `attempts` how many HTTP
    attempts were made; `fatal` says every later call to this endpoint will fail the same way
    (bad key, unknown model), so a run may stop instead of failing item after item."""

    kind = "error"
    fatal = False

    def __init__(self, message: str, *, attempts: int = 0, **details: Any):
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.details = details

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, attempts={self.attempts})"


class LLMTimeoutError(LLMError):
    """No complete reply within the per-attempt deadline, on every attempt."""

    kind = "timeout"


class LLMConnectionError(LLMError):
    """The connection failed (refused, reset, dropped mid-reply) on every attempt."""

    kind = "connection"


class LLMHTTPError(LLMError):
    """The server answered with an error status (after retries where the status is transient)."""

    kind = "http"

    def __init__(self, message: str, *, status: int, attempts: int = 0, **details: Any):
        super().__init__(message, attempts=attempts, **details)
        self.status = status
        self.fatal = status in (401, 403, 404)


class LLMRateLimitError(LLMHTTPError):
    """429 on every attempt, or a Retry-After longer than the configured cap."""

    kind = "rate_limited"


class LLMResponseError(LLMError):
    """A 200 reply whose body is not an OpenAI chat completion (bad JSON, no choices)."""

    kind = "malformed_response"


class LLMJSONError(LLMError):
    """A JSON reply was asked for and the content holds no parseable JSON value."""

    kind = "malformed_json"

    def __init__(self, message: str, *, content: str = "", attempts: int = 0, **details: Any):
        super().__init__(message, attempts=attempts, **details)
        self.content = content


class LLMTruncatedError(LLMJSONError):
    """The reply was cut off: finish_reason "length", or a JSON value that never closes."""

    kind = "truncated"
