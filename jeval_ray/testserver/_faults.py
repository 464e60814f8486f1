"""Fault injection for the local model server: which request fails, and how.

Faults are drawn per request: first from the queue of "the next N requests" faults, then by
probability with a seeded RNG (so a run with the same seed and request order fails the same
way). The object is shared with the server's handler threads and may be changed at runtime.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from dataclasses import dataclass, field

from jeval_ray.errors import ConfigError

#: Every fault the server can inject.
FAULT_KINDS: tuple[str, ...] = (
    "rate_limit",  # 429 with Retry-After / retry-after-ms
    "server_error",  # 5xx (``server_error_status``)
    "slow",  # answer after ``delay_s``
    "drop",  # close the connection without a reply
    "malformed_json",  # 200 with a truncated JSON body
    "bad_tool_args",  # a tool call whose ``arguments`` is not valid JSON
    "unknown_tool",  # a tool call to a tool the request did not offer
    "unauthorized",  # 401 whose body echoes the key it was sent, as some providers do
    "bad_request",  # 400
    # model quirks: a 200 whose reply is odd
    "length_in_tool_call",  # finish_reason length inside a tool call: its arguments cut off
    "empty_reply",  # no text, no tool call, no reasoning
    "refusal",  # the model declines (OpenAI message.refusal; Anthropic stop_reason refusal)
    "reasoning_only",  # reasoning, but no text and no tool call
    "many_tool_calls",  # MANY_TOOL_CALLS tool calls in one reply (more than a step budget leaves)
)
#: Tool calls of a ``many_tool_calls`` reply.
MANY_TOOL_CALLS = 40


#: What llama-cpp-python's OpenAI-compatible server (0.3.x) accepts as ``response_format.type``.
LLAMA_CPP_RESPONSE_FORMATS: tuple[str, ...] = ("text", "json_object")


@dataclass
class Faults:
    """The fault plan of one server. Mutate it through its methods from any thread.

    ``rpm_limit`` enforces a request limit over a sliding ``rpm_window_s`` window (60 s, or
    shorter in tests): requests over it get 429 with the wait until a slot frees.
    """

    probabilities: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    retry_after_s: float | None = 1.0
    retry_after_ms: float | None = None
    server_error_status: int = 503
    delay_s: float = 2.0
    rpm_limit: int | None = None
    rpm_window_s: float = 60.0
    #: ``response_format`` types the server accepts (None = any). ``LLAMA_CPP_RESPONSE_FORMATS`` answers a
    #: ``json_schema`` as llama-cpp-python's server does: HTTP 500 "Input should be 'text' or 'json_object'"
    #: naming ``response_format``; a type outside the list that is not json_schema gets a 400.
    response_formats: list[str] | None = None
    #: a model's context window in tokens (None = unlimited): a request whose prompt (``prompt_tokens``) is
    #: longer gets OpenAI's HTTP 400 ``context_length_exceeded`` ("This model's maximum context length is N
    #: tokens. However, your messages resulted in M tokens. ..."; Anthropic's route: "prompt is too long")
    context_window: int | None = None

    def __post_init__(self) -> None:
        for kind, p in self.probabilities.items():
            _check(kind)
            if not 0.0 <= p <= 1.0:
                raise ConfigError(f"fault {kind!r}: probability must be in [0, 1], got {p}")
        self._rng = random.Random(self.seed)
        self._queue: deque[str] = deque()
        self._lock = threading.Lock()

    def queue(self, kind: str, n: int = 1) -> None:
        """Make the next ``n`` requests fail with ``kind`` (after any already queued)."""
        _check(kind)
        with self._lock:
            self._queue.extend([kind] * n)

    def set_probability(self, kind: str, p: float) -> None:
        """Make every request fail with ``kind`` with probability ``p`` (0 turns it off)."""
        _check(kind)
        if not 0.0 <= p <= 1.0:
            raise ConfigError(f"fault {kind!r}: probability must be in [0, 1], got {p}")
        with self._lock:
            self.probabilities[kind] = p

    def clear(self) -> None:
        """No more faults (queued or probabilistic); the RPM limit stays."""
        with self._lock:
            self._queue.clear()
            self.probabilities.clear()

    def draw(self) -> str | None:
        """The fault for the next request, or ``None`` to answer normally."""
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            # Probabilities are tried in FAULT_KINDS order so a seed gives one sequence.
            for kind in FAULT_KINDS:
                p = self.probabilities.get(kind, 0.0)
                if p > 0 and self._rng.random() < p:
                    return kind
            return None

    def retry_after_headers(self, wait_s: float | None = None) -> dict[str, str]:
        """Headers announcing a wait: ``wait_s`` if given, else the configured values."""
        if wait_s is not None:
            return {"retry-after-ms": str(int(wait_s * 1000) + 1), "retry-after": str(int(wait_s) + 1)}
        headers = {}
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = str(int(self.retry_after_ms))
        if self.retry_after_s is not None:
            value = self.retry_after_s
            headers["retry-after"] = str(int(value)) if float(value).is_integer() else str(value)
        return headers

    @classmethod
    def parse(cls, spec: str, **options: object) -> "Faults":
        """Faults from ``"rate_limit:0.1,drop*2"``: ``kind:p`` is a probability, ``kind*n`` the next n."""
        faults = cls(**options)  # type: ignore[arg-type]
        for item in filter(None, (part.strip() for part in spec.split(","))):
            try:
                if "*" in item:
                    kind, n = item.split("*", 1)
                    faults.queue(kind.strip(), int(n))
                elif ":" in item:
                    kind, p = item.split(":", 1)
                    faults.set_probability(kind.strip(), float(p))
                else:
                    raise ValueError
            except ConfigError:
                raise
            except ValueError:
                raise ConfigError(
                    f"bad fault {item!r}: write kind:probability or kind*count, kinds: {', '.join(FAULT_KINDS)}"
                ) from None
        return faults


def _check(kind: str) -> None:
    if kind not in FAULT_KINDS:
        raise ConfigError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")


__all__ = ["Faults", "FAULT_KINDS", "LLAMA_CPP_RESPONSE_FORMATS", "MANY_TOOL_CALLS"]
