"""The model-client exception hierarchy; catch ``ModelError`` to catch every endpoint failure.

``ModelError``
  ``MissingAPIKeyError``   the configured environment variable is not set (also a ``ConfigError``)
  ``ModelRequestError``    transport: connect error, timeout, dropped connection
  ``ModelHTTPError``       the endpoint answered with an error status (``status``)
    ``RateLimitError``     429 (carries ``retry_after_s`` when the endpoint announced one)
    ``ServerError``        5xx
    ``ClientRequestError`` 400/401/403/404 and other 4xx the request itself caused: never retried
      ``ResponseFormatRejected`` the endpoint refused the request's ``response_format`` (a 400/422,
                             or a 5xx whose body names ``response_format``, as llama.cpp answers)
      ``ContextLengthError`` the prompt is longer than the model's context window (a 400/413
                             ``context_length_exceeded``; the LLM agent elides and retries once)
  ``MalformedResponseError`` a 200 whose body is not the JSON the protocol promises

Every error knows whether it is worth retrying (``retryable``). Messages are built by the
clients and passed through ``redact`` so an API key can never reach a log or a record.
"""

from __future__ import annotations

from collections.abc import Iterable

from jeval_ray.errors import ConfigError, JEvalError

#: Statuses that say "try again later" rather than "your request is wrong".
RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 409, 429})


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each non-empty secret replaced by ``[REDACTED]``."""
    for secret in secrets:
        # Very short "keys" (e.g. "x" for local servers) would shred the message and protect nothing.
        if secret and len(secret) >= 6:
            text = text.replace(secret, "[REDACTED]")
    return text


class ModelError(JEvalError):
    """Base class of errors raised while calling a model endpoint.

    ``attempts`` is set by the retry layer to the number of requests it made before giving up,
    and ``gave_up`` to why it stopped; both appear in ``str(err)``.
    """

    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = 1
        self.gave_up: str | None = None

    def __str__(self) -> str:
        text = self.message
        if self.attempts > 1:
            text += f" (after {self.attempts} attempts)"
        if self.gave_up:
            text += f"; {self.gave_up}"
        return text


class MissingAPIKeyError(ModelError, ConfigError):
    """The environment variable named by ``api_key_env`` is unset or empty."""

    def __init__(self, model_name: str, env_var: str) -> None:
        super().__init__(
            f"model {model_name!r}: environment variable {env_var} is not set; "
            f"export {env_var}=<your key> (or set api_key_env: null for a local endpoint without auth)"
        )
        self.env_var = env_var


class ModelRequestError(ModelError):
    """The request did not get an answer: connect error, timeout or a dropped connection."""

    retryable = True


class ModelHTTPError(ModelError):
    """The endpoint answered with an error status. 408 and 409 land here and are retried."""

    def __init__(self, message: str, status: int, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status in RETRYABLE_STATUSES or self.status >= 500


class RateLimitError(ModelHTTPError):
    """HTTP 429; ``retry_after_s`` is the wait the endpoint announced, if any."""


class ServerError(ModelHTTPError):
    """HTTP 5xx."""


class ClientRequestError(ModelHTTPError):
    """HTTP 4xx caused by the request (bad request, auth, unknown model): fails at once."""


class ResponseFormatRejected(ClientRequestError):
    """The endpoint refused the ``response_format`` of the request: a 400/422, or a 5xx whose body
    names ``response_format`` (llama.cpp's server answers an unsupported ``json_schema`` with HTTP 500
    "Input should be 'text' or 'json_object'"). Deterministic, so never retried; the LLM judge falls
    back to a weaker structured-output mode instead."""

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return False


class ContextLengthError(ClientRequestError):
    """The endpoint refused the request as longer than the model's context window (OpenAI: 400
    ``context_length_exceeded``, "This model's maximum context length is N tokens..."; Anthropic: 400
    "prompt is too long"). Never retried as it is: the LLM agent elides old tool results and retries once."""


#: what the error bodies of context-length rejections say (OpenAI, vLLM, llama.cpp, Anthropic)
CONTEXT_LENGTH_MARKERS: tuple[str, ...] = ("context_length_exceeded", "maximum context length", "prompt is too long",
                                           "exceeds the context window", "exceed_context_size")


def rejects_context_length(status: int, body_text: str) -> bool:
    """Whether an error answer refuses the request for its length (the prompt passes the context window)."""
    text = body_text.lower()
    return status in (400, 413) and any(m in text for m in CONTEXT_LENGTH_MARKERS)


def rejects_response_format(status: int, body_text: str) -> bool:
    """Whether an error answer to a request carrying ``response_format`` refuses that option."""
    if status in (400, 422):
        return True
    return status >= 500 and "response_format" in body_text


class MalformedResponseError(ModelError):
    """The endpoint answered 200 with a body that is not valid JSON or lacks required fields.

    Retried: proxies and overloaded servers truncate bodies, and a second answer is usually whole.
    """

    retryable = True


def http_error(status: int, message: str, retry_after_s: float | None = None) -> ModelHTTPError:
    """The typed error for an HTTP error ``status``."""
    if status == 429:
        return RateLimitError(message, status, retry_after_s)
    if status >= 500:
        return ServerError(message, status, retry_after_s)
    if status in RETRYABLE_STATUSES:
        return ModelHTTPError(message, status, retry_after_s)
    return ClientRequestError(message, status, retry_after_s)


__all__ = [
    "ModelError",
    "MissingAPIKeyError",
    "ModelRequestError",
    "ModelHTTPError",
    "RateLimitError",
    "ServerError",
    "ClientRequestError",
    "ResponseFormatRejected",
    "ContextLengthError",
    "rejects_context_length",
    "MalformedResponseError",
    "http_error",
    "rejects_response_format",
    "redact",
    "RETRYABLE_STATUSES",
]
