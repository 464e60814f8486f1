"""Arrow schemas of the records (DESIGN §7): the one definition every writer and reader imports.

Every row carries the keys ``run_id, episode_id, attempt, task_id, model, seed, condition``.
``task_id`` and ``model`` are also the hive partition columns of the Parquet datasets.
"""

from __future__ import annotations

import pyarrow as pa

KEY_FIELDS = [
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("episode_id", pa.string(), nullable=False),
    pa.field("attempt", pa.int32(), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("condition", pa.string(), nullable=False),
]
KEYS = [f.name for f in KEY_FIELDS]
PARTITION_COLUMNS = ("task_id", "model")
TS = pa.timestamp("us", tz="UTC")

#: per step: the spec's eight fields plus keys, is_error, timestamp and the observation text
STEPS = pa.schema(KEY_FIELDS + [
    pa.field("step_idx", pa.int32(), nullable=False),
    pa.field("tool", pa.string()),
    pa.field("args", pa.string()),
    pa.field("observation_hash", pa.string()),
    pa.field("tokens_in", pa.int64()),
    pa.field("tokens_out", pa.int64()),
    pa.field("latency_ms", pa.float64()),
    pa.field("reasoning_trace", pa.string()),
    pa.field("is_error", pa.bool_()),
    pa.field("timestamp", TS),
    pa.field("observation", pa.string()),
])

#: verifier metrics, in the order of ``Verification``
METRIC_FIELDS = [
    pa.field("tp", pa.int32()), pa.field("fp", pa.int32()), pa.field("fn", pa.int32()), pa.field("tn", pa.int32()),
    pa.field("precision", pa.float64()), pa.field("recall", pa.float64()), pa.field("f2", pa.float64()),
    pa.field("criteria_accuracy", pa.float64()), pa.field("misstatement_error", pa.float64()),
    pa.field("fabrications", pa.int32()), pa.field("outcome", pa.float64()),
    pa.field("evidence_coverage", pa.float64()), pa.field("evidence_precision", pa.float64()),
    pa.field("redundant_calls", pa.int32()), pa.field("steps_to_first_flag", pa.int32()),
    pa.field("baseline_before_claim", pa.bool_()), pa.field("premature_disposition", pa.int32()),
    pa.field("process", pa.float64()), pa.field("n_dispositions", pa.int32()), pa.field("n_flags", pa.int32()),
]
METRICS = [f.name for f in METRIC_FIELDS]

EPISODES = pa.schema(KEY_FIELDS + [
    pa.field("agent", pa.string()),
    pa.field("tier", pa.string()),
    pa.field("status", pa.string()),  # completed | failed
    pa.field("termination", pa.string()),  # submitted | step_budget | context_overflow | model_error: … | timeout: …
    pa.field("error", pa.string()),
    pa.field("world_hash", pa.string()),
    pa.field("run_config", pa.string()),  # the run-config contract as JSON
    pa.field("prompt_injection", pa.bool_()),
    pa.field("n_steps", pa.int32()),
    pa.field("n_errors", pa.int32()),
    pa.field("tokens_in", pa.int64()),
    pa.field("tokens_out", pa.int64()),
    pa.field("cost_usd", pa.float64()),
    pa.field("judge_cost_usd", pa.float64()),
    pa.field("wall_s", pa.float64()),
    pa.field("started_at", TS),
    pa.field("finished_at", TS),
    *METRIC_FIELDS,
    pa.field("extra_metrics", pa.string()),
    pa.field("rationale", pa.float64()),
    pa.field("judge_spread", pa.float64()),
    pa.field("judges_ok", pa.int32()),
    pa.field("judges_failed", pa.int32()),
    pa.field("score", pa.float64()),
    pa.field("worker", pa.string()),
    pa.field("package_version", pa.string()),
])

DISPOSITIONS = pa.schema(KEY_FIELDS + [
    pa.field("step_idx", pa.int32()),
    pa.field("entry_id", pa.string()),
    pa.field("decision", pa.string()),  # flag | clear
    pa.field("criteria", pa.string()),
    pa.field("evidence", pa.list_(pa.string())),
    pa.field("rationale", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("fabricated", pa.bool_()),
    pa.field("is_final", pa.bool_()),
    pa.field("is_exception", pa.bool_()),  # reference fact, scorer side: written after the episode ends
])

JUDGMENTS = pa.schema(KEY_FIELDS + [
    pa.field("judge", pa.string()),
    pa.field("judge_idx", pa.int32()),
    pa.field("rubric", pa.string()),
    pa.field("judge_version", pa.string()),  # the judge's own version, e.g. reference-2
    pa.field("status", pa.string()),  # ok | failed
    pa.field("rationale_score", pa.float64()),
    pa.field("item_scores", pa.string()),  # JSON: per disposition, per rubric item
    pa.field("overall_comment", pa.string()),
    pa.field("error", pa.string()),
    pa.field("tokens_in", pa.int64()),
    pa.field("tokens_out", pa.int64()),
    pa.field("cost_usd", pa.float64()),
    pa.field("latency_ms", pa.float64()),
])

DATASETS: dict[str, pa.Schema] = {"steps": STEPS, "episodes": EPISODES, "dispositions": DISPOSITIONS, "judgments": JUDGMENTS}
