"""Turn an ``EpisodeOutcome`` into record rows (Arrow tables of the schemas in ``schemas``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass

import pyarrow as pa

from jeval_ray import __version__
from jeval_ray.records.schemas import DISPOSITIONS, EPISODES, JUDGMENTS, METRICS, STEPS
from jeval_ray.scoring import Judgment
from jeval_ray.world._version import world_version


def episode_id(task_id: str, model: str, seed: int, condition: str, config_digest: str) -> str:
    """Stable id of a grid cell: sha256 of (task, model, seed, condition, config), 24 hex chars."""
    text = json.dumps([task_id, model, int(seed), condition, config_digest])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class EpisodeKeys:
    run_id: str
    episode_id: str
    attempt: int
    task_id: str
    model: str
    seed: int
    condition: str

    def row(self) -> dict:
        return {"run_id": self.run_id, "episode_id": self.episode_id, "attempt": int(self.attempt), "task_id": self.task_id,
                "model": self.model, "seed": int(self.seed), "condition": self.condition}


def steps_rows(keys: EpisodeKeys, outcome, keep_observations: bool = True) -> list[dict]:
    """One row per step (the ``steps`` schema)."""
    k = keys.row()
    return [{**k, "step_idx": s.step_idx, "tool": s.tool, "args": s.args, "observation_hash": s.observation_hash,
             "tokens_in": s.tokens_in, "tokens_out": s.tokens_out, "latency_ms": s.latency_ms,
             "tokens_cached_in": s.tokens_cached_in, "tokens_cache_write": s.tokens_cache_write, "cache_hit": s.cache_hit,
             "tokens_reasoning": s.tokens_reasoning, "elided_results": s.elided, "observations_cut": s.observations_cut,
             "reasoning_trace": s.reasoning_trace, "is_error": s.is_error, "timestamp": s.timestamp,
             "observation": s.observation if keep_observations else None} for s in outcome.steps]


def steps_table(keys: EpisodeKeys, outcome, keep_observations: bool = True) -> pa.Table:
    return pa.Table.from_pylist(steps_rows(keys, outcome, keep_observations), schema=STEPS)


def dispositions_rows(keys: EpisodeKeys, outcome) -> list[dict]:
    """One row per disposition, in the order they were made (the ``dispositions`` schema)."""
    k = keys.row()
    last = {d["entry_id"]: i for i, d in enumerate(outcome.dispositions)}
    return [{**k, "step_idx": d["step_idx"], "entry_id": d["entry_id"], "decision": d["decision"], "criteria": d["criteria"],
             "evidence": d["evidence"], "rationale": d["rationale"], "amount": d["amount"], "fabricated": d["fabricated"],
             "is_final": last[d["entry_id"]] == i, "is_exception": d["reference"]["is_exception"]}
            for i, d in enumerate(outcome.dispositions)]


def dispositions_table(keys: EpisodeKeys, outcome) -> pa.Table:
    return pa.Table.from_pylist(dispositions_rows(keys, outcome), schema=DISPOSITIONS)


def table_to_ipc(table: pa.Table) -> bytes:
    """An Arrow table as one IPC stream (how record tables travel between processes: one buffer,
    read back without copying, instead of a pickle of every column)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def judgments_table(keys: EpisodeKeys, judgments: list[Judgment] | list[dict],
                    accounting: list[dict] | None = None) -> pa.Table:
    return pa.Table.from_pylist(judgment_rows(keys, judgments, accounting), schema=JUDGMENTS)


_JUDGMENT_DEFAULTS = {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "latency_ms": 0.0, "calls": 0, "reasks": 0}


def judgment_rows(keys: EpisodeKeys, judgments: list[Judgment] | list[dict], accounting: list[dict] | None = None, *,
                  jury: str | None = None, scored_by: str = "sweep", first_idx: int = 0) -> list[dict]:
    """One row per judge of an episode (the ``judgments`` schema), judge ``i`` with ``judge_idx = first_idx + i``.

    ``judgments``: ``Judgment`` models or their records (``Judgment.as_record``, what judge workers return),
    which carry their own tokens, cost and latency; ``accounting`` (optional) overrides those per judge.
    """
    k = keys.row()
    accounting = accounting or [{} for _ in judgments]
    return [{**k, **_JUDGMENT_DEFAULTS, **(j if isinstance(j, dict) else j.as_record()), **a, "judge_idx": first_idx + i,
             "jury": jury, "scored_by": scored_by}
            for i, (j, a) in enumerate(zip(judgments, accounting))]


def episode_row(keys: EpisodeKeys, outcome, *, agent: str, tier: str, run_config_json: str, judge_agg: dict,
                final_score: float | None, judge_cost_usd: float = 0.0, worker: str = "",
                started_at: dt.datetime | None = None, finished_at: dt.datetime | None = None) -> dict:
    """One episode row; ``judge_agg`` comes from ``aggregate_judgments``."""
    v = outcome.score.verification.as_dict()
    knobs = json.loads(run_config_json).get("generator", {}) if run_config_json else {}
    return {
        **keys.row(), "agent": agent, "tier": tier, "status": outcome.status, "termination": outcome.termination,
        "error": outcome.error, "world_hash": outcome.world_hash,
        "world_version": world_version(keys.task_id), "run_config": run_config_json,
        "prompt_injection": bool(knobs.get("prompt_injection", False)), "n_steps": len(outcome.steps),
        "n_errors": sum(s.is_error for s in outcome.steps), "tokens_in": outcome.tokens_in, "tokens_out": outcome.tokens_out,
        "tokens_cached_in": outcome.tokens_cached_in, "tokens_cache_write": outcome.tokens_cache_write,
        "cache_hits": outcome.cache_hits, "tokens_reasoning": outcome.tokens_reasoning,
        "cost_usd": outcome.cost_usd, "judge_cost_usd": judge_cost_usd, "wall_s": outcome.wall_s,
        "started_at": started_at, "finished_at": finished_at, **{m: v[m] for m in METRICS},
        "extra_metrics": json.dumps(v.get("extra") or {}), "rationale": judge_agg.get("rationale"),
        "judge_spread": judge_agg.get("judge_spread"), "judges_ok": judge_agg.get("judges_ok", 0),
        "judges_failed": judge_agg.get("judges_failed", 0), "judges_unscored": judge_agg.get("judges_unscored", 0),
        "judge_tokens_in": 0, "judge_tokens_out": 0, "score": final_score, "worker": worker,
        "package_version": __version__,
    }


def failed_episode_row(keys: EpisodeKeys, *, agent: str, tier: str, run_config_json: str, error: str,
                       termination: str = "error", worker: str = "") -> dict:
    """The row of an episode that could not be played (e.g. its worker died on every attempt)."""
    row = {f.name: None for f in EPISODES}
    row.update(keys.row())
    row.update({"agent": agent, "tier": tier, "status": "failed", "termination": termination, "error": error,
                "world_version": world_version(keys.task_id), "run_config": run_config_json, "n_steps": 0, "worker": worker, "package_version": __version__})
    return row


def skipped_episode_row(keys: EpisodeKeys, *, agent: str, tier: str, run_config_json: str, termination: str) -> dict:
    """The row of an episode not started because a budget would have been passed: status ``skipped``,
    ``termination`` ``budget: ...``. Not an error and not completed: a resume plays it (docs/data.md)."""
    row = failed_episode_row(keys, agent=agent, tier=tier, run_config_json=run_config_json, error="",
                             termination=termination)
    row.update({"status": "skipped", "error": None})
    return row


def episodes_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=EPISODES)
