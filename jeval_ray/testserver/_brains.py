"""Brains: what decides the local model server's reply from the conversation it is sent.

A brain is any callable ``BrainRequest -> BrainReply``. ``ScriptedBrain`` answers from a fixed
script (for tests and demos); ``AgentBrain`` plays a built-in ``Agent`` through the protocol,
one agent per conversation, so the whole HTTP path can be exercised without a real model.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jeval_ray.protocol import Agent, Observation, Turn, reset_agent


@dataclass
class ToolCall:
    """One tool call of a reply; ``arguments`` is a dict or raw JSON text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        """The arguments as JSON text (raw text is passed through unchanged)."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class BrainReply:
    """What the model "says": text, tool calls and an optional reasoning trace."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    #: None = the protocol's usual one (tool calls or a stop); "length" = cut at max_tokens
    finish_reason: str | None = None
    refusal: str | None = None  # the model declined (OpenAI ``message.refusal``, Anthropic ``stop_reason: refusal``)


@dataclass
class BrainRequest:
    """A request in the OpenAI chat format, whichever route it came in on."""

    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    seed: int | None = None
    response_format: dict[str, Any] | None = None  # OpenAI structured output, as sent

    def tool_names(self) -> list[str]:
        """Names of the tools offered (OpenAI function format)."""
        return [t.get("function", t).get("name", "") for t in self.tools]

    def replies_so_far(self) -> int:
        """How many assistant turns the conversation already holds."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")


Brain = Callable[[BrainRequest], BrainReply]


class ScriptedBrain:
    """Reply number *i* of a conversation is ``script[i]`` (the last entry repeats).

    Stateless: *i* is the number of assistant turns in the request, so retries and parallel
    conversations get consistent answers. Without a script it calls ``list_documents`` (or the
    first tool offered), then ``submit``, then answers with text.
    """

    def __init__(self, script: list[BrainReply] | None = None) -> None:
        self.script = list(script) if script else None

    def __call__(self, request: BrainRequest) -> BrainReply:
        i = request.replies_so_far()
        if self.script:
            return self.script[min(i, len(self.script) - 1)]
        names = request.tool_names()
        if i == 0 and names:
            first = "list_documents" if "list_documents" in names else names[0]
            return BrainReply(text="Looking around first.", tool_calls=[ToolCall(first, {})], reasoning="Start by listing.")
        if i == 1 and "submit" in names:
            return BrainReply(tool_calls=[ToolCall("submit", {"summary": "scripted brain: done"})])
        return BrainReply(text="Done.")


@dataclass
class _Conversation:
    agent: Agent
    replies: int = 0
    last_reply: BrainReply | None = None
    call_tools: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _looks_like_error(text: str) -> bool:
    # The chat protocol carries no error flag; the environment writes errors as {"error": ...}.
    head = text.lstrip()[:20].lower().replace(" ", "")
    return head.startswith("error") or head.startswith('{"error"')


def conversation_key(model: str, system: str, seed: int | None) -> str:
    """sha256 of the model, system prompt and seed: the fallback key of a conversation."""
    return hashlib.sha256(f"{model}\x00{system}\x00{seed}".encode()).hexdigest()


def _first_call_id(request: BrainRequest) -> str | None:
    """The id of the first tool call this server made in the conversation (unique per conversation).

    The brief is the same for every seed of a task and the Messages API sends no seed, so the
    prompt cannot tell concurrent episodes apart; the tool-call ids the server handed out can.
    """
    for m in request.messages:
        if m.get("role") == "assistant":
            calls = m.get("tool_calls") or []
            return calls[0].get("id") if calls else None
    return None


class AgentBrain:
    """Drives one ``Agent`` (made by ``factory(seed)``) per conversation through the protocol.

    New ``tool`` messages become ``Observation``s (``is_error`` when the text starts with
    "Error" or is a JSON ``{"error": ...}``), a new user message becomes the loop's reminder (``tool=""``), and the turn's
    actions come back as tool calls. A request repeating the last one (a client retry after a
    lost answer) gets the same reply; a conversation that starts over resets the agent.
    """

    def __init__(self, factory: Callable[[int], Agent]) -> None:
        self._factory = factory
        self._conversations: dict[str, _Conversation] = {}
        self._lock = threading.Lock()
        # One event loop for every agent, so agents holding loop-bound state keep working.
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agent-brain", daemon=True)
        self._thread.start()

    def __call__(self, request: BrainRequest) -> BrainReply:
        seen = request.replies_so_far()
        first = _first_call_id(request) if seen else None
        key = first or conversation_key(request.model, request.system, request.seed)
        with self._lock:
            conv = None if seen == 0 else self._conversations.get(key)
            # a request with no assistant turn opens an episode; an unknown or skipped-ahead one restarts
            if conv is None or seen > conv.replies:
                conv = self._start(request)
        with conv.lock:
            if seen == conv.replies - 1 and conv.last_reply is not None:
                return conv.last_reply  # a client retry after a lost answer
            observations = self._observations(request, conv)
            turn = asyncio.run_coroutine_threadsafe(conv.agent.act(observations), self._loop).result()
            reply = self._reply(turn, conv)
            conv.replies += 1
            conv.last_reply = reply
        if seen == 0 or first is None:
            with self._lock:
                # the prompt key is only a fallback for conversations whose first reply called no tool
                self._conversations[key] = conv
                if reply.tool_calls and reply.tool_calls[0].id:
                    self._conversations[reply.tool_calls[0].id] = conv
        return reply

    def _start(self, request: BrainRequest) -> _Conversation:
        agent = self._factory(request.seed or 0)
        reset_agent(agent, request.system, request.tools, request.seed or 0, episode_info(request.system))
        return _Conversation(agent=agent)

    @staticmethod
    def _observations(request: BrainRequest, conv: _Conversation) -> list[Observation]:
        if conv.replies == 0:
            return []
        last_assistant = max(i for i, m in enumerate(request.messages) if m.get("role") == "assistant")
        observations = []
        for msg in request.messages[last_assistant + 1 :]:
            text = msg.get("content") or ""
            if msg.get("role") == "tool":
                call_id = msg.get("tool_call_id")
                tool = conv.call_tools.get(call_id or "", "")
                observations.append(Observation(call_id, tool, text, _looks_like_error(text)))
            elif msg.get("role") == "user":
                observations.append(Observation(None, "", text, False))
        return observations

    @staticmethod
    def _reply(turn: Turn, conv: _Conversation) -> BrainReply:
        calls = []
        for j, action in enumerate(turn.actions):
            call_id = action.call_id or f"call_{uuid.uuid4().hex[:16]}"
            conv.call_tools[call_id] = action.tool
            calls.append(ToolCall(action.tool, action.args, call_id))
        text = turn.text
        if turn.stop_reason and not calls:
            text = f"{text or ''}\n[agent stopped: {turn.stop_reason}]".strip()
        return BrainReply(text=text, tool_calls=calls, reasoning=turn.reasoning_trace)

    def close(self) -> None:
        """Stop the agents' event loop."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


def episode_info(brief: str) -> dict:
    """The task id and step budget of the episode whose brief is ``brief``.

    A built-in agent takes them from the episode at reset; behind the test server only the wire
    protocol is seen, so this brain reads them off the brief's engagement and budget lines (the only
    place in the project that reads the brief for them)."""
    task = re.search(r"(?:Engagement|Procedure asked for): (JE-\d+)", brief or "")
    budget = re.search(r"You have (\d+) tool calls", brief or "")
    return {"task_id": task.group(1) if task else "JE-1", "step_budget": int(budget.group(1)) if budget else 10**9}


def builtin_brain(agent_name: str) -> AgentBrain:
    """An ``AgentBrain`` playing the built-in agent ``agent_name`` (``jeval_ray.agents.make_agent``)."""
    from jeval_ray.agents import make_agent

    make_agent(agent_name, 0)  # an unknown name fails at startup, not at the first request
    return AgentBrain(lambda seed: make_agent(agent_name, seed))


__all__ = [
    "Brain",
    "BrainRequest",
    "BrainReply",
    "ToolCall",
    "ScriptedBrain",
    "AgentBrain",
    "builtin_brain",
    "conversation_key",
    "episode_info",
]
