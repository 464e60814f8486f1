"""``LLMAgent``: an agent whose turns come from a chat model behind a ``ModelConfig``.

The agent owns the conversation (OpenAI chat format, converted by the Anthropic client when
needed): the brief is the system prompt, every tool call the model makes becomes an ``Action``
and every ``Observation`` goes back as the matching ``tool`` message. It never raises for an
endpoint failure: the retry layer absorbs transient errors and a final failure ends the
episode with ``stop_reason="model_error: ..."``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from jeval_ray.models._client import ChatClient, ChatResult
from jeval_ray.models.tokens import count_messages, count_tokens
from jeval_ray.models.factory import make_client
from jeval_ray.protocol import Action, Agent, Observation, Turn
from jeval_ray.models.config import ModelConfig
from jeval_ray.models.errors import ContextLengthError, ModelError

#: First user message: chat APIs need one, and it tells the model the tools are live.
KICKOFF = "Begin the engagement now. Work only through the tools; call submit when you are done."

#: Sent in place of a tool result the episode loop did not return (the API needs one per call).
MISSING_RESULT = "No result: this tool call was not executed."

#: Replies in a row without a tool call (empty, reasoning only, or text) after which the agent stops.
MAX_IDLE_REPLIES = 3
#: Put before the arguments of a call cut off at max_tokens: they are never run as if whole.
CUT_MARK = "<cut off at max_tokens> "
CUT_NOTE = ("Your reply reached max_tokens ({max_tokens}) while writing this tool call, so its arguments were cut off "
            "and it was not run. Make the call again, shorter, or make fewer calls in one reply.")
IDLE_NOTES = {
    "empty reply": "Your last reply was empty: no text and no tool call.",
    "reasoning only": "Your last reply held reasoning only: no text and no tool call.",
}  # a text-only reply gets the loop's reminder as it is


#: What an elided tool result becomes: one line saying what it was and how to fetch it again.
ELIDED_STUB = ("[Result elided to fit the context window ({chars:,} characters). To see it again, call {tool} "
               "with {args}]")
#: Tool results never elided: the dispositions made (and the submit) stay in the conversation.
KEEP_RESULTS = frozenset({"flag_entry", "clear_entry", "submit"})


def truncate_observation(text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters, with a note telling the model how to page for the rest."""
    if len(text) <= cap:
        return text
    return (
        text[:cap]
        + f"\n[... truncated: showing the first {cap} of {len(text)} characters. To see the rest, "
        "call the tool again with `offset`/`limit` arguments (e.g. a higher `offset` or a smaller "
        "`limit`) to page through the results.]"
    )


class LLMAgent(Agent):
    """An agent played by the model of ``config``.

    ``client`` (optional) replaces the client built from the config, ``limiter`` (a
    ``TokenBucketLimiter`` or a ``RateLimiter`` actor handle) and ``cache`` (a response cache) are
    passed to the client it builds.
    ``max_observation_chars`` and ``context_window`` default to the config's values.
    """

    def __init__(
        self,
        config: ModelConfig,
        *,
        client: ChatClient | None = None,
        limiter: Any = None,
        max_observation_chars: int | None = None,
        context_window: int | None = None,
        cache: Any = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self._client = client or make_client(config, limiter=limiter, cache=cache)
        self.max_observation_chars = max_observation_chars or config.max_observation_chars
        self.context_window = context_window or config.context_window
        self.messages: list[dict[str, Any]] = []
        self._tools: list[dict] = []
        self._seed: int | None = None
        self._pending: dict[str, str] = {}
        self._cut: set[str] = set()  # call ids of the last reply cut off at max_tokens
        self._idle = 0  # replies in a row without a tool call
        self._idle_kind: str | None = None
        self._tools_tokens = 0
        self.spent_usd = 0.0  # this episode's model cost so far (episode_budget_usd)
        # Prompt size as last reported by the endpoint, and how many messages it covered.
        self._reported_tokens = 0
        self._reported_upto = 0
        self._elided: set[int] = set()  # indices of tool messages elided (messages are only ever appended)
        self._cuts = 0  # observations cut at max_observation_chars since the last request
        #: this episode's counts: observations cut by the agent (the safety net behind the environment's
        #: paging; 0 when every result came within max_observation_chars) and tool results elided
        self.observations_cut = 0
        self.results_elided = 0

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        """Start a conversation with ``brief`` as the system prompt and ``tools`` (OpenAI format)."""
        self.messages = [{"role": "system", "content": brief}]
        self._tools = list(tools)
        self._seed = seed
        self._pending = {}
        self._cut = set()
        self._idle, self._idle_kind = 0, None
        self.spent_usd = 0.0
        self._tools_tokens = count_messages([], self._tools)
        self._reported_tokens = 0
        self._reported_upto = 0
        self._elided = set()
        self._cuts = 0
        self.observations_cut = 0
        self.results_elided = 0

    def _append_observations(self, observations: list[Observation]) -> None:
        if len(self.messages) == 1:
            self.messages.append({"role": "user", "content": KICKOFF})
        reminders: list[str] = []
        for obs in observations:
            text = truncate_observation(obs.text, self.max_observation_chars)
            if len(text) != len(obs.text):
                self._cuts += 1
                self.observations_cut += 1
            if obs.call_id in self._cut:
                text = CUT_NOTE.format(max_tokens=self.config.max_tokens) + "\n" + text
            if obs.call_id is not None and obs.call_id in self._pending:
                self._pending.pop(obs.call_id)
                self.messages.append({"role": "tool", "tool_call_id": obs.call_id, "content": text})
            elif obs.tool == "":
                # the loop's reminder after a reply without a tool call, saying what the reply was
                note = IDLE_NOTES.get(self._idle_kind or "")
                reminders.append(f"{note} {text}" if note else text)
            else:
                reminders.append(f"Result of {obs.tool}:\n{text}")
        # Every tool call of the last reply needs an answer, or the next request is a 400.
        for call_id in list(self._pending):
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": MISSING_RESULT})
        self._pending = {}
        if reminders:
            self.messages.append({"role": "user", "content": "\n\n".join(reminders)})

    def prompt_tokens_estimate(self) -> int:
        """Prompt size of the next request: the last reported usage plus the tokens of what was added since
        (``models.tokens.count_messages``, cl100k_base), or the count of the whole request before any usage."""
        if self._reported_tokens:
            return self._reported_tokens + count_messages(self.messages[self._reported_upto :])
        return count_messages(self.messages) + self._tools_tokens

    def _elide(self, target: int, prompt: int | None = None) -> int:
        """Replace the oldest tool results by one-line stubs (``ELIDED_STUB``) until the prompt estimate is at
        most ``target`` tokens; returns how many were elided. Kept: the brief, the kickoff, every assistant
        message (the model's own calls), the dispositions' results (``KEEP_RESULTS``) and the results of the
        last reply. One chunk at a time, so a provider's prefix cache breaks once, not every turn."""
        calls: dict[str, tuple[str, str]] = {}
        last_reply = 0
        for i, m in enumerate(self.messages):
            if m.get("role") == "assistant":
                last_reply = i
                for c in m.get("tool_calls") or []:
                    fn = c.get("function") or {}
                    args = fn.get("arguments")
                    calls[c.get("id")] = (fn.get("name", "?"), args if isinstance(args, str) else json.dumps(args))
        if prompt is None:
            prompt = count_messages(self.messages) + self._tools_tokens
        n = 0
        for i, m in enumerate(self.messages[:last_reply]):
            if prompt <= target:
                break
            if m.get("role") != "tool" or i in self._elided:
                continue
            tool, args = calls.get(m.get("tool_call_id"), ("the tool", "the same arguments"))
            if tool in KEEP_RESULTS:
                continue
            content = m.get("content") or ""
            stub = ELIDED_STUB.format(chars=len(content), tool=tool, args=args)
            prompt -= count_tokens(content) - count_tokens(stub)
            self.messages[i] = {**m, "content": stub}
            self._elided.add(i)
            n += 1
        if n:
            self.results_elided += n
            self._reported_tokens = 0  # the conversation changed before the last reported usage: count it again
            self._reported_upto = 0
        return n

    async def act(self, observations: list[Observation]) -> Turn:
        """Send the new observations, return the model's tool calls as a ``Turn``.

        When the next request would pass ``context_window``, ``context_strategy`` decides: ``elide_oldest``
        elides the oldest tool results down to ``elide_to`` of the window (``_elide``), ``stop`` ends the
        episode (``context_overflow``). A context-length rejection by the endpoint (``ContextLengthError``)
        gets one elision and one retry."""
        if not self.messages:
            raise RuntimeError("LLMAgent.act called before reset")
        self._append_observations(observations)
        cut, self._cuts = self._cuts, 0
        elided = 0
        prompt = self.prompt_tokens_estimate()
        if prompt + self.config.max_tokens > self.context_window and self.config.context_strategy == "elide_oldest":
            elided = self._elide(int(self.context_window * self.config.elide_to))
            prompt = self.prompt_tokens_estimate()
        if prompt + self.config.max_tokens > self.context_window:
            return Turn(actions=[], stop_reason="context_overflow", elided=elided, observations_cut=cut)
        cap = self.config.episode_budget_usd
        if cap is not None:
            worst = self.config.cost_usd(prompt, self.config.max_tokens)  # no cache discount: an upper bound
            if self.spent_usd + worst > cap:
                return Turn(actions=[], stop_reason=f"budget: episode_budget_usd={cap:g} would be passed by the next "
                                                    f"call (spent {self.spent_usd:.6f}, next at most {worst:.6f} USD)")
        started = time.perf_counter()
        try:
            try:
                sent = len(self.messages)
                result = await self._client.chat(self.messages, self._tools, seed=self._seed)
            except ContextLengthError:
                # the endpoint counts more than the estimate: one elision (below what it refused) and one retry
                target = int(min(self.context_window * self.config.elide_to, prompt * self.config.elide_to))
                more = self._elide(target) if self.config.context_strategy == "elide_oldest" else 0
                if not more:
                    raise
                elided += more
                sent = len(self.messages)
                result = await self._client.chat(self.messages, self._tools, seed=self._seed)
        except ModelError as err:
            latency = (time.perf_counter() - started) * 1000.0
            return Turn(actions=[], latency_ms=latency, stop_reason=f"model_error: {type(err).__name__}: {err}",
                        elided=elided, observations_cut=cut)
        self.messages.append(result.assistant_message)
        self.spent_usd += result.cost_usd
        if result.usage_reported:
            self._reported_tokens = result.tokens_in + result.tokens_out
            self._reported_upto = sent + 1
        self._pending = {a.call_id: a.tool for a in result.actions if a.call_id}
        actions, stop = self._quirks(result)
        return Turn(
            actions=actions,
            stop_reason=stop,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            tokens_cached_in=result.tokens_cached_in,
            tokens_cache_write=result.tokens_cache_write,
            cache_hit=result.cache_hit,
            tokens_reasoning=result.tokens_reasoning,
            latency_ms=result.latency_ms,
            cost_usd=result.cost_usd,
            reasoning_trace=result.reasoning_trace,
            text=result.text,
            elided=elided,
            observations_cut=cut,
        )

    def _quirks(self, result: ChatResult) -> tuple[list, str | None]:
        """The turn's actions and stop reason given what was odd about the reply (docs/models.md):
        a refusal stops the episode; a call cut off at max_tokens is not run (its observation is an error
        saying so); MAX_IDLE_REPLIES replies in a row without a tool call stop it."""
        self._cut = set()
        if result.refusal:
            return [], f"refusal: {result.refusal[:300]}"
        actions = list(result.actions)
        if actions and result.finish_reason in ("length", "max_tokens"):
            last = actions[-1]
            raw = last.args if isinstance(last.args, str) else json.dumps(last.args)
            actions[-1] = Action(tool=last.tool, args=CUT_MARK + raw, call_id=last.call_id)
            if last.call_id:
                self._cut.add(last.call_id)
        if actions:
            self._idle, self._idle_kind = 0, None
            return actions, None
        self._idle += 1
        self._idle_kind = ("text only" if result.text else "reasoning only" if result.reasoning_trace
                           else "empty reply")
        if self._idle >= MAX_IDLE_REPLIES:
            return [], f"no_tool_call: {self._idle} replies in a row without a tool call (last: {self._idle_kind})"
        return [], None

    async def aclose(self) -> None:
        """Close the model client's connections."""
        await self._client.aclose()


__all__ = ["ELIDED_STUB", "KICKOFF", "LLMAgent", "truncate_observation"]
