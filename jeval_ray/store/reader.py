"""Readers of a sweep run's Parquet datasets that apply the dedup rule.

Dedup rule (retries and resumed runs write a new ``attempt``; nothing is ever rewritten):

1. ``episodes``: per ``episode_id`` keep the ``completed`` row with the highest ``attempt``;
   if no attempt completed, keep the row with the highest ``attempt`` (a ``failed`` row).
2. ``steps``, ``dispositions``, ``judgments``: keep only the rows whose ``(episode_id, attempt)``
   is the kept episodes row. Rows of an attempt that has no episodes row (written before a crash,
   or superseded) are dropped.

Every reader passes the unified schema of ``jeval_ray.records.schemas`` so columns added in a
later version are read as nulls from older files instead of being dropped.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from jeval_ray.records.schemas import DATASETS, PARTITION_COLUMNS
from jeval_ray._fs import is_dir, resolve_fs


def partitioning() -> ds.Partitioning:
    """Hive partitioning by ``task_id`` and ``model`` with URI-decoded values (``%2F`` -> ``/``)."""
    return ds.HivePartitioning(pa.schema([pa.field(c, pa.string()) for c in PARTITION_COLUMNS]), segment_encoding="uri")


def open_dataset(run_dir: str, name: str, *, filesystem=None) -> ds.Dataset | None:
    """The raw (not deduplicated) dataset ``name`` of a run, or ``None`` if nothing was written yet."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; one of {', '.join(DATASETS)}")
    fs, path = resolve_fs(run_dir, filesystem)
    if not is_dir(fs, f"{path}/{name}"):
        return None
    return ds.dataset(f"{path}/{name}", schema=DATASETS[name], format="parquet", filesystem=fs,
                      partitioning=partitioning(), ignore_prefixes=[".", "_"])


def read_raw(run_dir: str, name: str, *, columns: list[str] | None = None, filesystem=None) -> pa.Table:
    d = open_dataset(run_dir, name, filesystem=filesystem)
    schema = DATASETS[name]
    if d is None:
        t = schema.empty_table()
        return t.select(columns) if columns else t
    return d.to_table(columns=columns)


def kept_attempts(episodes: pa.Table) -> pa.Table:
    """``(episode_id, attempt)`` chosen by the dedup rule from (raw) episodes rows."""
    if episodes.num_rows == 0:
        return pa.table({"episode_id": pa.array([], pa.string()), "attempt": pa.array([], pa.int32())})
    completed = pc.if_else(pc.equal(episodes["status"], "completed"), episodes["attempt"], pa.scalar(None, pa.int32()))
    t = pa.table({"episode_id": episodes["episode_id"], "attempt": episodes["attempt"], "completed": completed})
    g = t.group_by("episode_id").aggregate([("attempt", "max"), ("completed", "max")])
    kept = pc.coalesce(g["completed_max"], g["attempt_max"]).cast(pa.int32())
    return pa.table({"episode_id": g["episode_id"], "attempt": kept})


def _first_per_key(t: pa.Table, keys: list[str]) -> pa.Table:
    """One row per key (the first), for the defensive case of a row written twice."""
    idx = pa.table({**{k: t[k] for k in keys}, "__i": pa.array(range(t.num_rows), pa.int64())})
    first = idx.group_by(keys).aggregate([("__i", "min")])["__i_min"]
    return t.take(pc.sort_indices(first))


def _key(t: pa.Table) -> pa.Array:
    # joins reject list columns (evidence), so rows are matched on a combined "id:attempt" key
    return pc.binary_join_element_wise(t["episode_id"], pc.cast(t["attempt"], pa.string()), ":")


def dedup(name: str, table: pa.Table, kept: pa.Table) -> pa.Table:
    """Apply the dedup rule to a raw table of dataset ``name`` given the kept ``(episode_id, attempt)``."""
    if table.num_rows == 0:
        return table
    out = table.filter(pc.is_in(_key(table), value_set=_key(kept)))
    if name == "episodes":
        out = _first_per_key(out, ["episode_id", "attempt"])
    sort = [("task_id", "ascending"), ("model", "ascending"), ("episode_id", "ascending")]
    if name in ("steps", "dispositions"):
        sort.append(("step_idx", "ascending"))
    elif name == "judgments":
        sort.append(("judge_idx", "ascending"))
    return out.sort_by(sort).cast(DATASETS[name])


def read_dataset(run_dir: str, name: str, *, dedup_rows: bool = True, filesystem=None) -> pa.Table:
    """Dataset ``name`` of a run as one Arrow table, deduplicated by default."""
    raw = read_raw(run_dir, name, filesystem=filesystem)
    if not dedup_rows:
        return raw
    eps = raw if name == "episodes" else read_raw(run_dir, "episodes", columns=["episode_id", "attempt", "status"],
                                                   filesystem=filesystem)
    return dedup(name, raw, kept_attempts(eps))


def read_run(run_dir: str, *, dedup_rows: bool = True, filesystem=None) -> dict[str, pa.Table]:
    """All four datasets of a run, deduplicated by default."""
    eps = read_raw(run_dir, "episodes", filesystem=filesystem)
    kept = kept_attempts(eps)
    out = {}
    for name in DATASETS:
        raw = eps if name == "episodes" else read_raw(run_dir, name, filesystem=filesystem)
        out[name] = dedup(name, raw, kept) if dedup_rows else raw
    return out


def episode_progress(run_dir: str, *, filesystem=None) -> tuple[set[str], dict[str, int]]:
    """For resume: the ids with a completed episodes row, and the highest attempt seen per id in any dataset."""
    completed: set[str] = set()
    max_attempt: dict[str, int] = {}
    for name in DATASETS:
        cols = ["episode_id", "attempt", "status"] if name == "episodes" else ["episode_id", "attempt"]
        t = read_raw(run_dir, name, columns=cols, filesystem=filesystem)
        if t.num_rows == 0:
            continue
        g = t.group_by("episode_id").aggregate([("attempt", "max")])
        for eid, a in zip(g["episode_id"].to_pylist(), g["attempt_max"].to_pylist()):
            if a > max_attempt.get(eid, 0):
                max_attempt[eid] = a
        if name == "episodes":
            done = t.filter(pc.equal(t["status"], "completed"))["episode_id"]
            completed.update(done.to_pylist())
    return completed, max_attempt


#: the judgments columns a summary reads (not the comments)
SUMMARY_COLUMNS = ["episode_id", "attempt", "jury", "judge", "judge_idx", "judge_model", "rubric", "status", "error",
                   "rationale_score", "item_scores", "reference_item_scores", "calls", "reasks", "tokens_in",
                   "tokens_out", "cost_usd"]


def read_judgment_rows(run_path: str, filesystem=None) -> list[dict]:
    """The ``SUMMARY_COLUMNS`` of a run's judgments rows of the kept attempts (the dedup rule), which
    ``jeval_ray.scoring.jury.judging_summary`` summarises."""
    rows = read_raw(run_path, "judgments", columns=SUMMARY_COLUMNS, filesystem=filesystem)
    if rows.num_rows == 0:
        return []
    kept = kept_attempts(read_raw(run_path, "episodes", columns=["episode_id", "attempt", "status"], filesystem=filesystem))

    def key(t):
        return pc.binary_join_element_wise(t["episode_id"], pc.cast(t["attempt"], "string"), ":")

    return rows.filter(pc.is_in(key(rows), value_set=key(kept))).to_pylist()


__all__ = ["SUMMARY_COLUMNS", "dedup", "episode_progress", "kept_attempts", "open_dataset", "partitioning", "read_dataset",
           "read_judgment_rows", "read_raw", "read_run"]
