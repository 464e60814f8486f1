"""``LocalModelServer``: an OpenAI- and Anthropic-compatible HTTP server on loopback, with faults.

Standard library only (``ThreadingHTTPServer``): one thread per connection, so slow answers
and dropped connections are easy to produce and do not block other requests. Routes:

- ``POST /v1/chat/completions`` (OpenAI format, tool calls, usage)
- ``POST /v1/messages`` (Anthropic Messages format)
- the judge route: a request on either of those whose system prompt starts with the LLM judge's
  prompt tag is answered by ``judge`` (a ``JudgeBrain``: rubric JSON, or malformed, truncated or
  injected answers on demand) instead of the brain
- ``GET  /v1/models``
- ``POST /admin/faults`` (change the fault plan of a running server: JSON, see ``_update_faults``)
- ``POST /admin/judge`` (queue judge answer modes: ``{"next": {mode: n}, "modes": {model: mode}}``)
- ``GET  /admin/requests`` (the request log)
"""

from __future__ import annotations

import hashlib
import json
import sys
import logging
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jeval_ray.cache import strip_cache_markers
from jeval_ray.errors import ConfigError
from jeval_ray.models.tokens import count_messages, count_tokens
from jeval_ray.testserver._brains import Brain, BrainReply, BrainRequest, ScriptedBrain, ToolCall
from jeval_ray.testserver._faults import MANY_TOOL_CALLS, Faults
from jeval_ray.testserver._judge import JudgeBrain, is_judge_request

log = logging.getLogger("jeval_ray.testserver")

#: The only interfaces the server binds: it is a test double, never a service.
LOOPBACK_HOSTS = {"127.0.0.1", "localhost"}
BAD_ARGUMENTS = '{"entry_id": "JE-'  # truncated JSON, as a model cut off mid-call writes it
UNKNOWN_TOOL = "no_such_tool"
AUTH_HEADERS = {"authorization", "x-api-key"}


@dataclass
class RequestRecord:
    """One request as the server saw it. Times are ``time.monotonic()`` of the server process."""

    arrived: float
    path: str
    fault: str | None = None
    status: int | None = None  # None: the connection was dropped
    answered: float | None = None
    retry_after_s: float | None = None
    seed: int | None = None
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # auth headers left out
    judge: bool = False  # answered by the judge route
    response_format: str | None = None  # the ``type`` of an OpenAI ``response_format``, if sent
    #: the body's fields other than messages, tools and system (sampling, reasoning, max_tokens ...)
    params: dict[str, Any] = field(default_factory=dict)
    cache_markers: int = 0  # ``cache_control`` markers in the body (Anthropic prompt-caching breakpoints)
    cached_tokens: int = 0  # prompt tokens the server reported as read from its prefix cache
    #: sha256 of the body without cache markers: the same request sent twice has the same hash
    body_hash: str = ""


def prompt_tokens(body: dict[str, Any], anthropic: bool = False, *, prime_reply: bool = True) -> int:
    """``usage.prompt_tokens`` of a request: ``count_messages`` (``jeval_ray.models.tokens``) of its messages
    and tools as sent, cache markers left out; an Anthropic request's in the OpenAI format, its system
    prompt as the first message."""
    if anthropic:
        system, messages, tools = _anthropic_to_openai(strip_cache_markers(body))
        messages = ([{"role": "system", "content": system}] if system else []) + messages
    else:
        messages, tools = strip_cache_markers(body.get("messages") or []), strip_cache_markers(body.get("tools") or [])
    return count_messages(messages, tools, prime_reply=prime_reply)


def completion_tokens(reply: BrainReply) -> int:
    """``usage.completion_tokens`` of a reply: its text, each tool call's name and arguments, its reasoning
    (at least 1, the stop token)."""
    calls = sum(count_tokens(c.name) + count_tokens(c.arguments_text()) for c in reply.tool_calls)
    return max(1, count_tokens(reply.text or "") + calls + count_tokens(reply.reasoning or ""))


def _count_markers(obj: Any) -> int:
    if isinstance(obj, dict):
        return int("cache_control" in obj) + sum(_count_markers(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_count_markers(v) for v in obj)
    return 0


def _conversation_of(messages: list[dict[str, Any]]) -> str | None:
    """The id of the first tool call the model made in a conversation (either protocol); None before any."""
    for m in messages:
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        if calls:
            return str(calls[0].get("id"))
        content = m.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                return str(block.get("id"))
        return None
    return None


class PrefixCache:
    """What a prefix-caching server reports: the prompt tokens a request shares, as a prefix of whole
    messages (tools and system first), with the previous request of its conversation.

    A conversation is keyed by the first tool call id the model made in it; the request before a
    conversation had a key is the messages before its first assistant reply (its very first request).
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._previous: dict[str, list[Any]] = {}
        self._capacity = capacity
        self._lock = threading.Lock()

    def cached_tokens(self, body: dict[str, Any], anthropic: bool = False) -> int:
        messages = strip_cache_markers(body.get("messages") or [])
        head = strip_cache_markers([body.get("tools") or [], body.get("system") or ""])
        seq = [head, *messages]
        key = _conversation_of(messages)
        if key is None:
            return 0
        with self._lock:
            previous = self._previous.pop(key, None)
            if previous is None:  # the conversation's first request: everything before the first reply
                first = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
                previous = [head, *messages[:first]]
            self._previous[key] = seq
            while len(self._previous) > self._capacity:
                self._previous.pop(next(iter(self._previous)))
        k = 0
        while k < min(len(seq), len(previous)) and seq[k] == previous[k]:
            k += 1
        if k == 0:
            return 0
        prefix = {**body, "messages": (body.get("messages") or [])[: k - 1]}
        return min(prompt_tokens(body, anthropic), prompt_tokens(prefix, anthropic, prime_reply=False))


def _anthropic_to_openai(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(system, messages, tools) of an Anthropic request, in the OpenAI chat format."""
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    messages: list[dict[str, Any]] = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if msg.get("role") == "assistant":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls = [
                {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))}}
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                content = b.get("content", "")
                if isinstance(content, list):
                    content = "".join(c.get("text", "") for c in content)
                messages.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": content})
            elif b.get("type") == "text":
                messages.append({"role": "user", "content": b.get("text", "")})
    tools = [
        {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t.get("input_schema", {})}}
        for t in body.get("tools", [])
    ]
    return system, messages, tools


class LocalModelServer:
    """A fake model endpoint on ``127.0.0.1`` driven by a ``brain``, with injectable ``faults``.

    ``api_key``: when set, requests must carry it (``Authorization: Bearer`` or ``x-api-key``)
    or get a 401 that echoes what they sent. ``judge`` answers judge prompts (a default
    ``JudgeBrain`` when not given). Use ``start()`` (returns the bound port; ``port=0`` picks a
    free one) and ``stop()``, or the context manager.
    """

    def __init__(
        self,
        brain: Brain | None = None,
        faults: Faults | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        judge: JudgeBrain | None = None,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ConfigError(f"the test server binds loopback only (127.0.0.1), refusing host {host!r}")
        self.brain: Brain = brain or ScriptedBrain()
        self.faults = faults or Faults()
        self.judge = judge or JudgeBrain()
        self.api_key = api_key
        self._address = ("127.0.0.1", port)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._log: list[RequestRecord] = []
        self._window: deque[float] = deque()
        self.rpm_rejections = 0
        self.prefix_cache = PrefixCache()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> int:
        """Bind and serve in a background thread; return the port."""
        handler = type("BoundHandler", (_Handler,), {"server_ref": self})
        self._httpd = _Server(self._address, handler)
        # A short poll interval makes stop() quick (the stdlib default waits up to 0.5 s).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="local-model-server", daemon=True
        )
        self._thread.start()
        log.info("local model server listening on %s", self.url)
        return self.port

    def stop(self) -> None:
        """Stop serving and close the socket (in-flight slow answers are abandoned)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        close = getattr(self.brain, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> "LocalModelServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL for clients, including ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- observation -------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log (model routes only), oldest first."""
        with self._lock:
            return list(self._log)

    def clear_log(self) -> None:
        """Forget the logged requests and the RPM window."""
        with self._lock:
            self._log.clear()
            self._window.clear()
            self.rpm_rejections = 0

    def retry_after_violations(self, slack_s: float = 0.05) -> list[RequestRecord]:
        """Requests that arrived while an announced Retry-After was still running.

        ``slack_s`` forgives requests already in flight when the 429 was answered.
        """
        log_ = self.requests
        bad = []
        for r in log_:
            if r.status == 429 and r.retry_after_s and r.answered is not None:
                start, end = r.answered + slack_s, r.answered + r.retry_after_s
                bad.extend(o for o in log_ if start < o.arrived < end)
        return bad

    # -- request handling (called from handler threads) --------------------------------------------

    def _admit(self, record: RequestRecord) -> float | None:
        """Log the request; enforce the RPM limit. Returns the wait to announce if over the limit."""
        faults = self.faults
        with self._lock:
            self._log.append(record)
            if faults.rpm_limit is None:
                return None
            while self._window and self._window[0] <= record.arrived - faults.rpm_window_s:
                self._window.popleft()
            if len(self._window) >= faults.rpm_limit:
                self.rpm_rejections += 1
                return self._window[0] + faults.rpm_window_s - record.arrived
            self._window.append(record.arrived)
            return None

    def _update_faults(self, body: dict[str, Any]) -> None:
        """Apply ``{"clear": bool, "probabilities": {kind: p}, "next": {kind: n}, <Faults field>: v}``."""
        if body.get("clear"):
            self.faults.clear()
        for kind, p in (body.get("probabilities") or {}).items():
            self.faults.set_probability(kind, float(p))
        for kind, n in (body.get("next") or {}).items():
            self.faults.queue(kind, int(n))
        for name in ("retry_after_s", "retry_after_ms", "server_error_status", "delay_s", "rpm_limit", "rpm_window_s",
                     "response_formats", "context_window"):
            if name in body:
                setattr(self.faults, name, body[name])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The stdlib default backlog (5) drops SYNs under a burst and adds 1 s retransmit stalls.
    request_queue_size = 128

    def handle_error(self, request, client_address) -> None:
        # a client that goes away mid-answer (timeouts, dropped-connection faults) is expected here
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_ref: LocalModelServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    # -- plumbing ----------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _read_json(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _presented_key(self) -> str | None:
        auth = self.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key")

    # -- routes ------------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        srv = self.server_ref
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": "jeval-testserver", "object": "model", "owned_by": "jeval"}]})
        elif self.path == "/admin/requests":
            self._send_json(200, {"requests": [asdict(r) for r in srv.requests], "rpm_rejections": srv.rpm_rejections})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        srv = self.server_ref
        try:
            body = self._read_json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(400, _error("request body is not a JSON object", "invalid_request_error"))
            return
        if self.path == "/admin/judge":
            try:
                for mode, n in (body.get("next") or {}).items():
                    srv.judge.queue(mode, int(n))
                for model, mode in (body.get("modes") or {}).items():
                    srv.judge.queue(mode, 0)  # validates the mode
                    srv.judge.modes[str(model)] = mode
            except (ConfigError, TypeError, ValueError) as exc:
                self._send_json(400, {"error": {"message": str(exc)}})
                return
            self._send_json(200, {"ok": True})
            return
        if self.path == "/admin/faults":
            try:
                srv._update_faults(body)
            except (ConfigError, TypeError, ValueError) as exc:
                self._send_json(400, {"error": {"message": str(exc)}})
                return
            self._send_json(200, {"ok": True})
            return
        if self.path not in ("/v1/chat/completions", "/v1/messages"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        anthropic = self.path == "/v1/messages"
        record = RequestRecord(
            arrived=time.monotonic(),
            path=self.path,
            seed=body.get("seed"),
            model=body.get("model"),
            headers={k.lower(): v for k, v in self.headers.items() if k.lower() not in AUTH_HEADERS},
            response_format=(body.get("response_format") or {}).get("type") if isinstance(body.get("response_format"), dict) else None,
            params={k: v for k, v in body.items() if k not in ("messages", "tools", "system")},
            cache_markers=_count_markers(body),
            body_hash=hashlib.sha256(json.dumps(strip_cache_markers(body), sort_keys=True).encode()).hexdigest(),
        )
        wait = srv._admit(record)
        fault = None if wait is not None else srv.faults.draw()
        record.fault = "rpm_limit" if wait is not None else fault
        self._judged = False
        self._cached = 0
        try:
            status, payload, headers, raw = self._answer(body, anthropic, wait, fault)
        except Exception as exc:  # a brain bug or an odd request: answer 500, keep serving
            log.exception("local model server: request failed")
            status, payload, headers, raw = 500, _error(f"{type(exc).__name__}: {exc}", "api_error"), None, None
        # Filled in before replying, so a client that has its answer always finds the record whole.
        record.status = status
        record.judge = self._judged
        record.cached_tokens = self._cached
        record.retry_after_s = _announced(headers) if status == 429 else None
        record.answered = time.monotonic()
        if status is None:
            self._drop()
        else:
            self._send_json(status, payload, headers, raw)

    def _answer(
        self, body: dict[str, Any], anthropic: bool, rpm_wait: float | None, fault: str | None
    ) -> tuple[int | None, Any, dict[str, str] | None, bytes | None]:
        """(status, payload, headers, raw body) of the reply; status None means drop the connection."""
        srv = self.server_ref
        faults = srv.faults
        presented = self._presented_key()
        if rpm_wait is not None:
            headers = faults.retry_after_headers(rpm_wait)
            return 429, _error("rate limit exceeded (requests per window)", "rate_limit_error"), headers, None
        if fault == "unauthorized" or (srv.api_key is not None and presented != srv.api_key):
            # Real providers echo (part of) the key they got; clients must redact it.
            return 401, _error(f"Incorrect API key provided: {presented}", "authentication_error"), None, None
        rejected = _rejected_response_format(body, faults.response_formats)
        if rejected is not None:
            return *rejected, None, None
        if fault == "bad_request":
            return 400, _error("invalid request (injected fault)", "invalid_request_error"), None, None
        if faults.context_window is not None:
            used = prompt_tokens(body, anthropic)
            if used > faults.context_window:
                return 400, _context_length_error(faults.context_window, used, anthropic), None, None
        if fault == "rate_limit":
            return 429, _error("rate limited (injected fault)", "rate_limit_error"), faults.retry_after_headers(), None
        if fault == "server_error":
            return faults.server_error_status, _error("server error (injected fault)", "api_error"), None, None
        if fault == "drop":
            return None, None, None, None
        if fault == "slow":
            time.sleep(faults.delay_s)
        if anthropic:
            system, messages, tools = _anthropic_to_openai(body)
        else:
            msgs = body.get("messages", [])
            system = "\n\n".join(m.get("content") or "" for m in msgs if m.get("role") == "system")
            messages = [m for m in msgs if m.get("role") != "system"]
            tools = body.get("tools") or []
        request = BrainRequest(model=str(body.get("model", "")), system=system, messages=messages, tools=tools,
                               seed=body.get("seed"), response_format=body.get("response_format"))
        judged = is_judge_request(request)
        self._judged = judged
        reply = srv.judge(request) if judged else srv.brain(request)
        reply = _apply_reply_fault(reply, fault)
        usage_in = prompt_tokens(body, anthropic)
        usage_out = completion_tokens(reply)
        # Anthropic caches only up to the breakpoints a request marks; OpenAI-compatible servers on their own
        cached = srv.prefix_cache.cached_tokens(body, anthropic) if (not anthropic or _count_markers(body)) else 0
        self._cached = cached
        payload = (_anthropic_payload if anthropic else _openai_payload)(body, reply, usage_in, usage_out, cached)
        if fault == "malformed_json":
            raw = json.dumps(payload).encode()
            return 200, None, None, raw[: len(raw) // 2]
        return 200, payload, None, None


def _rejected_response_format(body: dict[str, Any], accepted: list[str] | None) -> tuple[int, dict] | None:
    """(status, payload) refusing the request's ``response_format`` when its type is not ``accepted``: a
    ``json_schema`` gets llama-cpp-python's HTTP 500 (a pydantic literal error naming response_format)."""
    rf = body.get("response_format")
    if accepted is None or not isinstance(rf, dict) or rf.get("type", "text") in accepted:
        return None
    kind = rf.get("type")
    if kind == "json_schema":
        expected = " or ".join(f"'{a}'" for a in accepted)
        detail = (f"[{{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be "
                  f"{expected}\", 'input': '{kind}'}}]")
        return 500, {"error": {"message": detail, "type": "internal_server_error", "param": None, "code": None}}
    return 400, _error(f"response_format type {kind!r} is not supported", "invalid_request_error")


def _announced(headers: dict[str, str] | None) -> float | None:
    headers = headers or {}
    if "retry-after-ms" in headers:
        return float(headers["retry-after-ms"]) / 1000.0
    if "retry-after" in headers:
        return float(headers["retry-after"])
    return None


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def _context_length_error(window: int, used: int, anthropic: bool) -> dict[str, Any]:
    """The 400 body a provider sends for a prompt longer than the context window (OpenAI's, or Anthropic's)."""
    if anthropic:
        return {"type": "error", "error": {"type": "invalid_request_error",
                                           "message": f"prompt is too long: {used} tokens > {window} maximum"}}
    return {"error": {"message": f"This model's maximum context length is {window} tokens. However, your messages "
                                 f"resulted in {used} tokens. Please reduce the length of the messages.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


def _apply_reply_fault(reply: BrainReply, fault: str | None) -> BrainReply:
    if fault == "empty_reply":
        return BrainReply()
    if fault == "reasoning_only":
        return BrainReply(reasoning=reply.reasoning or "Thinking about which tool to call next...")
    if fault == "refusal":
        return BrainReply(refusal=REFUSAL_TEXT)
    if fault not in ("bad_tool_args", "unknown_tool", "length_in_tool_call", "many_tool_calls"):
        return reply
    calls = list(reply.tool_calls) or [ToolCall("list_documents", {})]
    first = calls[0]
    if fault == "length_in_tool_call":  # the model hit max_tokens while writing its (last) call
        text = first.arguments_text()
        return BrainReply(text=reply.text, tool_calls=[ToolCall(first.name, text[: max(1, len(text) // 2)], first.id)],
                          reasoning=reply.reasoning, finish_reason="length")
    if fault == "many_tool_calls":
        many = [ToolCall(first.name, first.arguments, f"call_many_{uuid.uuid4().hex[:8]}_{i}") for i in range(MANY_TOOL_CALLS)]
        return BrainReply(text=reply.text, tool_calls=many, reasoning=reply.reasoning)
    if fault == "bad_tool_args":
        calls[0] = ToolCall(first.name, BAD_ARGUMENTS, first.id)
    else:
        calls[0] = ToolCall(UNKNOWN_TOOL, first.arguments, first.id)
    return BrainReply(text=reply.text, tool_calls=calls, reasoning=reply.reasoning)


def _openai_payload(body: dict[str, Any], reply: BrainReply, usage_in: int, usage_out: int, cached: int = 0) -> dict[str, Any]:
    calls = [
        {"id": c.id or f"call_{uuid.uuid4().hex[:12]}", "type": "function", "function": {"name": c.name, "arguments": c.arguments_text()}}
        for c in reply.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": reply.refusal}
    if calls:
        message["tool_calls"] = calls
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "jeval-testserver"),
        "system_fingerprint": "jeval-testserver",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop")}],
        "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out,
                  "prompt_tokens_details": {"cached_tokens": cached},
                  "completion_tokens_details": {"reasoning_tokens": count_tokens(reply.reasoning or "")}},
    }


def _anthropic_payload(body: dict[str, Any], reply: BrainReply, usage_in: int, usage_out: int, cached: int = 0) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "testserver"})
    if reply.text or reply.refusal:
        content.append({"type": "text", "text": reply.text or reply.refusal})
    for c in reply.tool_calls:
        try:
            tool_input: Any = json.loads(c.arguments_text())
        except ValueError:
            tool_input = c.arguments_text()  # a bad-arguments fault: not an object, as a broken model might send
        content.append({"type": "tool_use", "id": c.id or f"toolu_{uuid.uuid4().hex[:12]}", "name": c.name, "input": tool_input})
    return {
        "id": f"msg_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "jeval-testserver"),
        "content": content,
        "stop_reason": ("refusal" if reply.refusal else "max_tokens" if reply.finish_reason == "length"
                        else "tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
        # with breakpoints marked, the shared prefix is read and the rest (up to the latest turn) written
        "usage": {"input_tokens": 0 if _count_markers(body) else usage_in, "output_tokens": usage_out,
                  "cache_read_input_tokens": cached,
                  "cache_creation_input_tokens": usage_in - cached if _count_markers(body) else 0},
    }


__all__ = ["LocalModelServer", "RequestRecord", "LOOPBACK_HOSTS"]
