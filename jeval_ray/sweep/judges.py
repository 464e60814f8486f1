"""The judges of the judge pool: judge functions and LLM judge models, assignment and the jury id.

``JUDGES`` maps a name to ``fn(packet, *, rubric, idx, seed) -> Judgment`` (plain or ``async``).
The reference judge is registered here; a function judge plugs in by adding an entry (or by naming
a ``"package.module:function"`` in ``scoring.judges``, which every worker process can import).
A name in ``scoring.judge_models`` is an LLM judge (``scoring.llm_judge.LLMJudge``), served by a
``JudgePanel`` that holds one client per judge model (sharing the endpoint's cluster-wide rate
limiter, as agents do). A judge that raises becomes a ``failed`` judgment with its error; an LLM
judge that cannot produce a valid answer is ``unscored``: neither is ever silently scored.

Assignment is deterministic: judge ``idx`` of an episode is ``assign_judge(judges, episode_id,
idx)`` and asks with ``judge_seed(episode_id, idx)``. An L4 episode's three judges are three
consecutive names of the list from an offset fixed by the episode id: three entries give three
different models, a single entry is asked three times with three seeds.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from jeval_ray.scoring import Judgment, reference_judge
from jeval_ray.scoring.llm_judge import PROMPT_TAG, judge_seed


def _reference(packet: dict, *, rubric: str, idx: int, seed: int) -> Judgment:
    return reference_judge(packet, rubric)


JUDGES: dict[str, Callable[..., Any]] = {"reference": _reference}


def register_judge(name: str, fn: Callable[..., Any]) -> None:
    """Register a judge in this process (worker processes import ``module:function`` names instead)."""
    JUDGES[name] = fn


def resolve_judge(name: str) -> Callable[..., Any]:
    if name in JUDGES:
        return JUDGES[name]
    if ":" in name:
        mod, _, attr = name.partition(":")
        return getattr(importlib.import_module(mod), attr)
    raise KeyError(f"unknown judge {name!r}")


def is_known_judge(name: str) -> bool:
    try:
        resolve_judge(name)
    except (KeyError, ImportError, AttributeError):
        return False
    return True


def assign_judge(judges: list[str], episode_id: str, idx: int) -> str:
    """The judge name of judge ``idx`` of an episode (see the module docstring)."""
    offset = int(hashlib.sha256(f"{episode_id}\x00assign".encode()).hexdigest()[:8], 16)
    return judges[(offset + idx) % len(judges)]


async def run_judge(name: str, packet: dict, *, rubric: str, idx: int, seed: int) -> Judgment:
    """Run one judge function; any exception becomes a failed ``Judgment``."""
    try:
        out = resolve_judge(name)(packet, rubric=rubric, idx=idx, seed=seed)
        if inspect.isawaitable(out):
            out = await out
        return out if isinstance(out, Judgment) else Judgment.model_validate(out)
    except Exception as exc:  # noqa: BLE001 - a judge failure is data, not a crash
        return Judgment(judge=name, rubric=rubric, status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])


def judge_model_config(entry: dict):
    """``(ModelConfig, structured_output)`` of a ``scoring.judge_models`` entry (a dict)."""
    from jeval_ray.models.config import ModelConfig

    fields = {k: v for k, v in entry.items() if k != "structured_output"}
    return ModelConfig.model_validate(fields), entry.get("structured_output", "auto")


def jury_id(judging: dict) -> str:
    """A short id of a jury: rubric, judge names, the judge models' identities and the judging settings.

    Rows of one jury share it (``judgments.jury``); a re-score with another jury or rubric gets
    another id, so the report can choose which jury's judgments it shows.
    """
    models = {}
    for name, entry in sorted((judging.get("models") or {}).items()):
        models[name] = {k: v for k, v in sorted(entry.items()) if k not in (
            "api_key_env", "rpm", "tpm", "max_concurrency", "timeout_s", "max_attempts", "max_total_wait_s",
            "backoff_base_s", "backoff_max_s", "price", "name")}
    ident = {"rubric": judging.get("rubric"), "judges": judging.get("judges"), "models": models, "prompt": PROMPT_TAG,
             "max_reasks": judging.get("max_reasks"), "rationale_max_chars": judging.get("rationale_max_chars"),
             "judges_per_episode": judging.get("judges_per_episode")}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:12]


class JudgePanel:
    """Runs any judge by name: LLM judge models (one client each, kept open) or judge functions.

    ``judging``: ``{"models": {name: judge model entry}, "max_reasks": n, "rationale_max_chars": n}``
    (``SweepConfig.judging()``). ``limiter_for(config)`` gives the rate limiter of a judge model's
    endpoint: the cluster-wide ``RateLimiter`` actor in the judge pool, an in-process limiter when
    re-scoring without Ray.
    """

    def __init__(self, judging: dict, limiter_for: Callable[[Any], Any] | None = None) -> None:
        self.judging = judging
        self.models: dict[str, dict] = dict(judging.get("models") or {})
        self._limiter_for = limiter_for or ray_limiter
        self._llm: dict[str, Any] = {}

    def is_llm(self, name: str) -> bool:
        return name in self.models

    def llm(self, name: str):
        """The ``LLMJudge`` of judge model ``name`` (built on first use)."""
        if name not in self._llm:
            from jeval_ray.scoring.llm_judge import LLMJudge

            config, structured = judge_model_config(self.models[name])
            self._llm[name] = LLMJudge(name, config, structured_output=structured,
                                       max_reasks=int(self.judging.get("max_reasks", 2)),
                                       rationale_max_chars=int(self.judging.get("rationale_max_chars", 2000)),
                                       limiter=self._limiter_for(config))
        return self._llm[name]

    async def judge(self, name: str, packet: dict, *, rubric: str, idx: int, seed: int) -> Judgment:
        if not self.is_llm(name):
            return await run_judge(name, packet, rubric=rubric, idx=idx, seed=seed)
        try:
            return await self.llm(name).judge(packet, rubric=rubric, seed=seed)
        except Exception as exc:  # noqa: BLE001 - e.g. a missing key: recorded, not a crash of the pool
            return Judgment(judge=name, rubric=rubric, status="failed", judge_model=name, judge_seed=seed,
                            error=f"{type(exc).__name__}: {exc}"[:2000])

    async def aclose(self) -> None:
        for judge in self._llm.values():
            await judge.aclose()
        self._llm.clear()


def ray_limiter(config) -> Any:
    """The endpoint's cluster-wide ``RateLimiter`` actor (shared with agents on the same endpoint), or None."""
    if not (config.rpm or config.tpm or config.max_concurrency):
        return None
    from jeval_ray.models.ratelimit import get_rate_limiter

    return get_rate_limiter(config.endpoint_key, config.rpm, config.tpm, config.max_concurrency)


def local_limiter(config) -> Any:
    """An in-process limiter for the endpoint (re-scoring without Ray), or None."""
    if not (config.rpm or config.tpm or config.max_concurrency):
        return None
    from jeval_ray.models.ratelimit import TokenBucketLimiter

    return TokenBucketLimiter(config.rpm, config.tpm, config.max_concurrency)


__all__ = ["JUDGES", "JudgePanel", "assign_judge", "is_known_judge", "judge_model_config", "judge_seed", "jury_id",
           "local_limiter", "ray_limiter", "register_judge", "resolve_judge", "run_judge"]
