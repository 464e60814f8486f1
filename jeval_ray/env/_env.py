"""``JEEnv``: one auditor episode with a Gymnasium-style ``reset`` / ``step``.

``reset(seed)`` generates the world and returns ``(brief, info)``; ``step(action)`` returns
``(observation, reward, terminated, truncated, info)``. ``submit`` terminates; running out of
the step budget truncates. The reward is 0 until the episode ends, then the final score: the
environment asks its ``scorer`` (``jeval_ray.scoring.score_episode`` unless another is injected).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import ValidationError

from jeval_ray.env._brief import make_brief
from jeval_ray.errors import ConfigError
from jeval_ray.protocol import Action
from jeval_ray.scoring import EpisodeScore, score_episode
from jeval_ray.tasks import ESSENTIAL_TOOLS, TaskSpec, get_task, resolve_knobs
from jeval_ray.tools import TOOLS, EpisodeState, ToolError, fit_result, tool_schemas
from jeval_ray.world import World, generate_world

#: what scores an ended episode: ``(spec, world, state, steps) -> EpisodeScore`` (its ``score`` is the reward)
Scorer = Callable[[TaskSpec, World, EpisodeState, list], EpisodeScore]


@dataclass
class StepLog:
    """One logged step (the trajectory record's per-step fields, docs/environment_spec.md; the episode
    loop adds the accounting: None where the agent measures none, e.g. the built-in agents)."""

    step_idx: int
    tool: str
    args: str  # canonical JSON text, or the raw text when it was not valid JSON
    observation: str
    observation_hash: str
    is_error: bool
    timestamp: dt.datetime
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None
    reasoning_trace: str | None = None
    tokens_cached_in: int | None = None
    tokens_cache_write: int | None = None
    cache_hit: bool | None = None
    tokens_reasoning: int | None = None
    elided: int | None = None
    observations_cut: int | None = None


def canonical_args(args: Any) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


def observation_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resolve_tools(task_id: str, tools_withheld: tuple[str, ...] | list[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tools_enabled, tools_withheld) for a task; a withheld tool must be one of the task's tools."""
    spec = get_task(task_id)
    withheld = tuple(dict.fromkeys(tools_withheld))
    bad = [t for t in withheld if t not in spec.tools]
    if bad:
        raise ConfigError(f"cannot withhold {bad} from {spec.id}: its tools are {', '.join(spec.tools)}")
    essential = [t for t in withheld if t in ESSENTIAL_TOOLS]
    if essential:
        raise ConfigError(f"cannot withhold {essential}: an episode cannot be played without {', '.join(sorted(ESSENTIAL_TOOLS))}")
    return tuple(t for t in spec.tools if t not in withheld), withheld


class JEEnv:
    """A journal-entry testing episode for one task, with optional knobs and withheld tools."""

    def __init__(self, task_id: str, knobs: dict | None = None, tools_withheld: tuple[str, ...] | list[str] = (),
                 *, step_budget: int | None = None, keep_observations: bool = True, scorer: Scorer | None = None):
        self.scorer: Scorer = scorer or score_episode
        self.spec = get_task(task_id, require_available=True)
        self.knobs = resolve_knobs(self.spec.id, knobs)
        self.tools_enabled, self.tools_withheld = resolve_tools(self.spec.id, tools_withheld)
        if step_budget is not None and step_budget < 1:
            raise ConfigError(f"step_budget must be >= 1, got {step_budget}")
        self.step_budget = step_budget or self.spec.step_budget
        self.keep_observations = keep_observations
        self.world: World | None = None
        self.state: EpisodeState | None = None
        self.steps: list[StepLog] = []
        self.brief = ""
        self.done = False
        self.termination: str | None = None
        #: the episode's character budget per tool result (``reset``); None: results are not paged
        self.max_observation_chars: int | None = None

    # ------------------------------------------------------------------ API
    @property
    def tool_schemas(self) -> list[dict]:
        return tool_schemas(self.spec, self.tools_enabled)

    def reset(self, seed: int = 0, *, world: World | None = None,
              max_observation_chars: int | None = None) -> tuple[str, dict]:
        """Generate the world of ``(task, seed, knobs)`` (or take a prebuilt one of the same) and brief the agent.

        ``max_observation_chars``: the agent's character budget per tool result. Every result longer
        than it is paged by the environment (``jeval_ray.tools.fit_result``): valid JSON within the
        budget that says how to get the rest (``next_offset``, ``total``, a note). None: no paging."""
        if max_observation_chars is not None and max_observation_chars < 1:
            raise ConfigError(f"max_observation_chars must be >= 1, got {max_observation_chars}")
        self.max_observation_chars = max_observation_chars
        wanted = (self.spec.id, int(seed), self.knobs.model_dump(mode="json"))
        if world is not None and (world.task_id, world.seed, world.knobs) != wanted:
            raise ValueError(f"reset: the prebuilt world is of ({world.task_id}, seed {world.seed}, its knobs), not of "
                             f"({self.spec.id}, seed {int(seed)}, this environment's knobs)")
        self.world = world if world is not None else generate_world(self.spec.id, int(seed), self.knobs.model_dump())
        self.state = EpisodeState(self.world, self.spec.criteria_codes)
        self.steps = []
        self.done = False
        self.termination = None
        self.brief = make_brief(self.spec, self.world, self.tools_enabled, self.step_budget)
        info = {"task_id": self.spec.id, "seed": int(seed), "world_hash": self.world.world_hash,
                "tools": self.tool_schemas, "step_budget": self.step_budget}
        return self.brief, info

    def step(self, action: Action | dict) -> tuple[str, float, bool, bool, dict]:
        """Run one tool call. Never raises on agent input: bad calls give an error observation."""
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise RuntimeError("the episode is over; call reset() to start another")
        tool, raw_args = _unpack(action)
        payload, is_error, args_text = self._dispatch(tool, raw_args)
        if is_error:
            payload = fit_result(tool, 0, payload, self.max_observation_chars)
        text = json.dumps(payload, separators=(",", ":"), default=str, ensure_ascii=False)
        self.steps.append(StepLog(self.state.step_idx, tool, args_text, text if self.keep_observations else "",
                                  observation_hash(text), is_error, dt.datetime.now(dt.timezone.utc)))
        self.state.step_idx += 1
        terminated = self.state.submitted
        truncated = not terminated and self.state.step_idx >= self.step_budget
        reward = 0.0
        info: dict = {"is_error": is_error, "step_idx": self.state.step_idx - 1}
        if terminated or truncated:
            self.done = True
            self.termination = "submitted" if terminated else "step_budget"
            result = self.score()
            reward = result.score
            info["score"] = result
        return text, reward, terminated, truncated, info

    def end(self, reason: str) -> None:
        """End the episode early for a reason outside the agent's control (e.g. model failure)."""
        self.done = True
        self.termination = reason

    def score(self) -> EpisodeScore:
        return self.scorer(self.spec, self.world, self.state, self.steps)

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self, tool: str, raw_args: Any) -> tuple[dict, bool, str]:
        if isinstance(raw_args, str):
            args_text = raw_args[:MAX_ARGS_CHARS]
            if len(raw_args) > MAX_ARGS_CHARS:
                return {"error": f"arguments are too long ({len(raw_args):,} characters; at most {MAX_ARGS_CHARS:,})"}, \
                    True, args_text
            if _text_depth(raw_args) > MAX_ARGS_DEPTH:
                return {"error": f"arguments are nested too deeply (at most {MAX_ARGS_DEPTH} levels)"}, True, args_text
            try:
                raw_args = json.loads(raw_args) if raw_args.strip() else {}
            except json.JSONDecodeError as exc:
                return {"error": f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"}, True, args_text
        else:
            if _value_depth(raw_args) > MAX_ARGS_DEPTH:
                return {"error": f"arguments are nested too deeply (at most {MAX_ARGS_DEPTH} levels)"}, True, \
                    str(type(raw_args).__name__)
            args_text = _safe_canonical(raw_args)
            if len(args_text) >= MAX_ARGS_CHARS:
                return {"error": f"arguments are too long (at most {MAX_ARGS_CHARS:,} characters as JSON)"
                                 + _longest_field(raw_args)}, True, args_text
        if tool == "":
            return {"error": "no tool was called; call one of the tools (use submit when you are done)"}, True, args_text
        if tool not in self.tools_enabled:
            known = ", ".join(self.tools_enabled)
            return {"error": f"unknown tool {str(tool)[:60]!r}; available tools: {known}"}, True, args_text
        if not isinstance(raw_args, dict):
            return {"error": "arguments must be a JSON object"}, True, args_text
        t = TOOLS[tool]
        try:
            args = t.args.model_validate(raw_args)
        except ValidationError as exc:
            return {"error": f"invalid arguments for {tool}: {_validation_text(exc)}"}, True, args_text
        try:
            payload = t.run(self.state, args)
            return fit_result(tool, getattr(args, "offset", 0), payload, self.max_observation_chars), False, args_text
        except ToolError as exc:
            return {"error": str(exc)}, True, args_text
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError,
                ArithmeticError) as exc:  # defensive: never crash
            return {"error": f"{tool} could not answer: {type(exc).__name__}: {str(exc)[:200]}"}, True, args_text


#: bounds on what an agent may send as one tool call's arguments (an error observation beyond them)
MAX_ARGS_CHARS = 20_000
MAX_ARGS_DEPTH = 8


def _text_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text (outside strings), without parsing it."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _value_depth(value: Any, limit: int = MAX_ARGS_DEPTH + 1) -> int:
    """The nesting depth of lists and dicts in ``value``, counted without recursion, up to ``limit``."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, tuple, dict)):
            d += 1
            deepest = max(deepest, d)
            if d >= limit:
                return d
            stack.extend((x, d) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _longest_field(args: Any) -> str:
    """``; 'query' is the longest`` for an argument object, so the agent knows what to shorten."""
    if not isinstance(args, dict) or not args:
        return ""
    name = max(args, key=lambda k: len(_safe_canonical(args[k])))
    return f"; {str(name)[:40]!r} is the longest"


def _unpack(action: Action | dict) -> tuple[str, Any]:
    if isinstance(action, Action):
        return str(action.tool), action.args
    if isinstance(action, dict):
        return str(action.get("tool", "")), action.get("args", {})
    return "", {"_invalid_action": str(action)[:200]}


def _safe_canonical(args: Any) -> str:
    try:
        return canonical_args(args)[:MAX_ARGS_CHARS]
    except (TypeError, ValueError, RecursionError):
        return str(args)[:MAX_ARGS_CHARS]


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        loc = ".".join(str(x) for x in e["loc"]) or "(arguments)"
        msg = "unexpected argument" if e["type"] == "extra_forbidden" else e["msg"]
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)
