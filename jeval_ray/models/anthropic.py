"""Client for the Anthropic Messages API (``/v1/messages``) with tool use and thinking blocks.

The conversation arrives in the OpenAI chat format (the project's one history format) and is
converted here: system messages become the top-level ``system``, assistant tool calls become
``tool_use`` blocks, ``tool`` messages become ``tool_result`` blocks in a user turn.
"""

from __future__ import annotations

import json
from typing import Any

from jeval_ray.protocol import Action
from jeval_ray.models._client import ChatClient, ChatResult

#: Key under which an assistant message keeps Anthropic's own content blocks. Thinking blocks
#: (with their signatures) must go back verbatim when tools are used with extended thinking.
NATIVE_CONTENT_KEY = "anthropic_content"


def tools_to_anthropic(tools: list[dict]) -> list[dict]:
    """OpenAI function tools -> Anthropic tools (``name``/``description``/``input_schema``)."""
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        out.append(
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return out


def _tool_input(arguments: Any) -> dict:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        parsed = None
    # Anthropic needs an object; keep what the model wrote so the history stays truthful.
    return parsed if isinstance(parsed, dict) else {"_raw_arguments": arguments}


def messages_to_anthropic(messages: list[dict]) -> tuple[str | None, list[dict]]:
    """Split OpenAI-format ``messages`` into Anthropic's ``(system, messages)``.

    Consecutive user-side content (tool results, reminders) is merged into one user turn, tool
    results first, as the Messages API expects.
    """
    system_parts: list[str] = []
    out: list[dict] = []

    def user_blocks() -> list[dict]:
        if not out or out[-1]["role"] != "user":
            out.append({"role": "user", "content": []})
        return out[-1]["content"]

    for msg in messages:
        role = msg["role"]
        if role == "system":
            system_parts.append(msg["content"])
        elif role == "tool":
            user_blocks().append(
                {"type": "tool_result", "tool_use_id": msg["tool_call_id"], "content": msg.get("content") or ""}
            )
        elif role == "user":
            content = msg["content"]
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            user_blocks().extend(blocks)
        elif role == "assistant":
            if NATIVE_CONTENT_KEY in msg:
                blocks = msg[NATIVE_CONTENT_KEY]
            else:
                blocks = [{"type": "text", "text": msg["content"]}] if msg.get("content") else []
                for call in msg.get("tool_calls") or []:
                    fn = call["function"]
                    blocks.append(
                        {"type": "tool_use", "id": call["id"], "name": fn["name"], "input": _tool_input(fn.get("arguments"))}
                    )
            # The API rejects an empty assistant turn (a reply with neither text nor tool call).
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": "(no reply)"}]})
        else:
            raise ValueError(f"unknown message role {role!r}")
    return ("\n\n".join(system_parts) or None), out


#: Anthropic's prompt-cache breakpoint (a 5-minute cache).
CACHE_MARKER = {"type": "ephemeral"}


def mark_cache_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with prompt-cache breakpoints on the system prompt, the last tool and the last content
    block of the latest turn (3 of the 4 the API allows). Blocks are copied, never changed in place."""
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": CACHE_MARKER}]
    if body.get("tools"):
        body["tools"] = [*body["tools"][:-1], {**body["tools"][-1], "cache_control": CACHE_MARKER}]
    messages = body.get("messages") or []
    if messages:
        last = messages[-1]
        blocks = list(last["content"]) if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
        for i in range(len(blocks) - 1, -1, -1):
            if blocks[i].get("type") not in ("thinking", "redacted_thinking"):  # thinking blocks take no marker
                blocks[i] = {**blocks[i], "cache_control": CACHE_MARKER}
                break
        body["messages"] = [*messages[:-1], {**last, "content": blocks}]
    return body


class AnthropicClient(ChatClient):
    """Anthropic Messages with tools; ``thinking`` blocks become the reasoning trace.

    Anthropic has no sampling seed, so ``send_seed`` has no effect here. With ``prompt_caching``
    (the default) requests mark cache breakpoints (``mark_cache_breakpoints``); the usage's
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are part of ``tokens_in`` and
    reported apart as ``tokens_cached_in`` and ``tokens_cache_write``.
    """

    path = "/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "anthropic-version": self.config.anthropic_version}
        if self._key:
            headers["x-api-key"] = self._key
        return headers

    def _body(self, messages: list[dict], tools: list[dict] | None, seed: int | None) -> dict[str, Any]:
        cfg = self.config
        system, converted = messages_to_anthropic(messages)
        body: dict[str, Any] = {"model": cfg.model, "max_tokens": cfg.max_tokens, "messages": converted}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools_to_anthropic(tools)
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.top_p is not None:
            body["top_p"] = cfg.top_p
        if cfg.thinking_budget_tokens is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": cfg.thinking_budget_tokens}
        body.update(cfg.extra_body)
        if cfg.prompt_caching:
            body = mark_cache_breakpoints(body)
        return body

    def _parse(self, data: dict[str, Any]) -> ChatResult:
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise TypeError("content is not a list of blocks")
        texts: list[str] = []
        thoughts: list[str] = []
        actions: list[Action] = []
        calls_out: list[dict[str, Any]] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "thinking":
                thoughts.append(block.get("thinking", ""))
            elif kind == "redacted_thinking":
                thoughts.append("[redacted thinking]")
            elif kind == "tool_use":
                raw = json.dumps(block.get("input", {}))
                actions.append(Action(tool=block["name"], args=raw, call_id=block["id"]))
                calls_out.append({"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": raw}})
        text = "".join(texts) or None
        assistant: dict[str, Any] = {"role": "assistant", "content": text or "", NATIVE_CONTENT_KEY: blocks}
        if calls_out:
            assistant["tool_calls"] = calls_out
        usage = data.get("usage") or {}
        tokens_in = sum(
            int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return ChatResult(
            actions=actions,
            text=text,
            tokens_in=tokens_in,
            tokens_out=int(usage.get("output_tokens") or 0),
            latency_ms=0.0,
            cost_usd=0.0,
            reasoning_trace="\n".join(thoughts) or None,
            finish_reason=data.get("stop_reason"),
            assistant_message=assistant,
            usage_reported=bool(usage),
            tokens_cached_in=int(usage.get("cache_read_input_tokens") or 0),
            refusal=(text or "(refused)") if data.get("stop_reason") == "refusal" else None,
            tokens_cache_write=int(usage.get("cache_creation_input_tokens") or 0),
        )


__all__ = ["AnthropicClient", "CACHE_MARKER", "mark_cache_breakpoints", "messages_to_anthropic", "tools_to_anthropic",
           "NATIVE_CONTENT_KEY"]
