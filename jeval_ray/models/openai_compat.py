"""Client for OpenAI-compatible ``/chat/completions`` (OpenAI, vLLM, SGLang, Ollama, OpenRouter ...)."""

from __future__ import annotations

import json
from typing import Any

from jeval_ray.protocol import Action
from jeval_ray.models._client import ChatClient, ChatResult


class OpenAICompatClient(ChatClient):
    """Chat completions with function tools; ``reasoning_content``/``reasoning`` become the trace."""

    path = "/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return headers

    def _body(self, messages: list[dict], tools: list[dict] | None, seed: int | None) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": messages, cfg.max_tokens_param: cfg.max_tokens}
        if tools:
            body["tools"] = tools
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.top_p is not None:
            body["top_p"] = cfg.top_p
        if seed is not None:
            body["seed"] = seed
        if cfg.reasoning_effort is not None:
            body["reasoning_effort"] = cfg.reasoning_effort
        body.update(cfg.extra_body)
        return body

    def _parse(self, data: dict[str, Any]) -> ChatResult:
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("choices[0].message is not an object")
        actions: list[Action] = []
        calls_out: list[dict[str, Any]] = []
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call["function"]
            args = fn.get("arguments", "")
            # Ollama sends arguments as an object; keep the contract "raw JSON text" for everyone.
            raw = args if isinstance(args, str) else json.dumps(args)
            call_id = call.get("id") or f"call_{i}"
            actions.append(Action(tool=fn["name"], args=raw, call_id=call_id))
            calls_out.append({"id": call_id, "type": "function", "function": {"name": fn["name"], "arguments": raw}})
        text = message.get("content")
        if isinstance(text, list):  # some servers return content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        reasoning = message.get("reasoning_content") or message.get("reasoning") or None
        # The reasoning is not sent back: several servers reject it in the history.
        assistant: dict[str, Any] = {"role": "assistant", "content": text or ""}
        if calls_out:
            assistant["tool_calls"] = calls_out
        usage = data.get("usage") or {}
        # OpenAI, vLLM, SGLang: prompt_tokens_details.cached_tokens; DeepSeek: prompt_cache_hit_tokens. Both are
        # part of prompt_tokens.
        details = usage.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0)
        reasoning_tokens = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        return ChatResult(
            actions=actions,
            text=text or None,
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            latency_ms=0.0,
            cost_usd=0.0,
            reasoning_trace=reasoning if isinstance(reasoning, str) else None,
            finish_reason=choice.get("finish_reason"),
            assistant_message=assistant,
            usage_reported=bool(usage),
            tokens_cached_in=cached,
            refusal=message.get("refusal") if isinstance(message.get("refusal"), str) and message.get("refusal") else None,
            tokens_reasoning=None if reasoning_tokens is None else int(reasoning_tokens),
        )


__all__ = ["OpenAICompatClient"]
