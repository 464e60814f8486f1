"""Arrow schemas of the records: the one definition every writer and reader imports.

Every row carries the keys ``run_id, episode_id, attempt, task_id, model, seed, condition``.
``task_id`` and ``model`` are also the hive partition columns of the Parquet datasets (the layout:
docs/sweep.md).

Every field carries a description (``DESCRIPTIONS`` below) as Arrow field metadata under the key
``description``; Parquet files keep it, so ``pyarrow.parquet.read_schema(f).field(name).metadata``
shows it. ``docs/data.md`` is generated from these schemas: after changing a schema or a
description, regenerate it with ``python -m jeval_ray.records.datadoc > docs/data.md``
(``tests/test_docs.py`` fails while it is stale or while a field has no description).
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

#: per step: the eight fields of the trajectory record (docs/environment_spec.md) plus keys, is_error,
#: timestamp and the observation text
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
    pa.field("tokens_cached_in", pa.int64()),
    pa.field("tokens_cache_write", pa.int64()),
    pa.field("cache_hit", pa.bool_()),
    pa.field("tokens_reasoning", pa.int64()),
    pa.field("elided_results", pa.int32()),
    pa.field("observations_cut", pa.int32()),
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
    pa.field("world_version", pa.int32()),
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
    pa.field("judges_unscored", pa.int32(), metadata={"description": "Judgments of this episode left unscored (an LLM "
             "judge gave no valid answer within its re-asks, its endpoint failed, or the judge budget was spent); "
             "not in the median, never counted as zero."}),
    pa.field("judge_tokens_in", pa.int64(), metadata={"description": "Prompt tokens of every LLM judge call of this "
             "episode (re-asks included), apart from the agent's tokens_in."}),
    pa.field("judge_tokens_out", pa.int64(), metadata={"description": "Completion tokens of every LLM judge call of "
             "this episode (re-asks included), apart from the agent's tokens_out."}),
    pa.field("score", pa.float64()),
    pa.field("worker", pa.string()),
    pa.field("package_version", pa.string()),
    pa.field("tokens_cached_in", pa.int64()),
    pa.field("tokens_cache_write", pa.int64()),
    pa.field("cache_hits", pa.int32()),
    pa.field("tokens_reasoning", pa.int64()),
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
    pa.field("is_exception", pa.bool_()),
])

JUDGMENTS = pa.schema(KEY_FIELDS + [
    pa.field("judge", pa.string()),
    pa.field("judge_idx", pa.int32()),
    pa.field("rubric", pa.string()),
    pa.field("judge_version", pa.string()),
    pa.field("status", pa.string()),  # ok | unscored (reason in error) | failed
    pa.field("rationale_score", pa.float64()),
    pa.field("item_scores", pa.string()),  # JSON: per disposition, per rubric item
    pa.field("overall_comment", pa.string()),
    pa.field("error", pa.string()),
    pa.field("tokens_in", pa.int64()),
    pa.field("tokens_out", pa.int64()),
    pa.field("cost_usd", pa.float64()),
    pa.field("latency_ms", pa.float64()),
    pa.field("judge_model", pa.string(), metadata={"description": "The judge model entry (scoring.judge_models name) "
             "of an LLM judgment; null for the reference and function judges."}),
    pa.field("jury", pa.string(), metadata={"description": "Id of the jury that wrote this row (rubric, judges, judge "
             "models, judging settings; sweep.judges.jury_id). The manifest's judging.juries describes each id."}),
    pa.field("prompt_hash", pa.string(), metadata={"description": "sha256 (16 hex) of an LLM judgment's first request "
             "(messages and response_format); with episode, attempt, judge, judge_idx, judge model, rubric and jury it "
             "keys re-scored rows (records.schemas.JUDGMENT_KEY)."}),
    pa.field("judge_seed", pa.int64(), metadata={"description": "The seed of this judge of this episode (from episode "
             "id and judge_idx): orders the dispositions in the prompt and is sent as the request seed."}),
    pa.field("calls", pa.int32(), metadata={"description": "Judge model requests answered for this judgment "
             "(1 + re-asks; client retries of one request are not counted)."}),
    pa.field("reasks", pa.int32(), metadata={"description": "Re-asks after an invalid answer (each quotes the "
             "validation error)."}),
    pa.field("reference_item_scores", pa.string(), metadata={"description": "JSON: the reference judge's item scores "
             "of the same packet, kept beside an LLM judgment to calibrate it (null for other judges)."}),
    pa.field("scored_by", pa.string(), metadata={"description": "'sweep' for judgments made during the sweep, "
             "'rescore' for rows appended by python -m jeval_ray.rescore."}),
    pa.field("structured_output", pa.string(), metadata={"description": "How an LLM judge's answering request asked "
             "for JSON: json_schema, json_object (the schema as response_format of type json_object) or instructions "
             "(the schema in the prompt only); auto falls back along that order when the endpoint rejects an option "
             "(docs/scoring.md). Null for the reference and function judges."}),
])



DESCRIPTION_KEY = b"description"

_KEY_DESCRIPTIONS = {
    "run_id": "The sweep run this row belongs to (the run folder's name, e.g. 20260101T000000Z-abc123).",
    "episode_id": "Stable id of the grid cell (task, model, seed, condition and its contract): sha256, 24 hex "
                  "characters. The same cell has the same id in every run and after resume.",
    "attempt": "Attempt number of the episode, 1 upwards; a retry after a lost worker has a higher one. Dedup keeps one "
               "attempt per episode_id (docs/sweep.md).",
    "task_id": "Task id, JE-1 ... JE-16 (docs/tasks.md). Also a hive partition column (task_id=<id>/).",
    "model": "The model's name in the sweep config (models[].name). Also a hive partition column (model=<URI-encoded name>/).",
    "seed": "World seed: the same (task, seed, knobs) always generates the same world.",
    "condition": "Condition name: 'full', 'withheld' (the task's withheld_variant) or a condition of the config; "
                 "conditions are scored and reported apart.",
}

_METRIC_DESCRIPTIONS = {
    "tp": "Verifier: defects flagged (true positives), over final, non-void dispositions (docs/scoring.md).",
    "fp": "Verifier: non-defects flagged (false positives).",
    "fn": "Verifier: defects not flagged (false negatives).",
    "tn": "Verifier: the rest of the ledger slice, hidden entries included (true negatives).",
    "precision": "Verifier: tp / (tp + fp); 1 when nothing was flagged and there is no defect, else 0 when nothing was flagged.",
    "recall": "Verifier: tp / (tp + fn); 1 when the world has no defect.",
    "f2": "Verifier: F2 = 5PR / (4P + R) of precision P and recall R.",
    "criteria_accuracy": "Verifier: share of true positives whose criteria code matches the defect's (0 when no defect "
                         "was found, 1 when the world has none).",
    "misstatement_error": "Verifier, tasks that ask for amounts: mean over the true positives of misstatement criteria "
                          "of min(1, |amount - true| / |true|), against the nearest accepted amount, a missing amount "
                          "counting 1 (control deviations have no amount); null for tasks that do not ask for amounts.",
    "fabrications": "Verifier: dispositions that cite an evidence id not opened at an earlier step (void: the entry "
                    "counts as undispositioned). A count for this episode.",
    "outcome": "Outcome score in [0, 1]: the sum of true-positive credits / (tp + fp + fn) (a wrong criteria code halves "
               "a credit; amounts scale it), 1 when nothing is to be found and nothing is flagged, after any task "
               "adjustment (extra_metrics); docs/scoring.md.",
    "evidence_coverage": "Process: required evidence ids opened / required (1 when none is required).",
    "evidence_precision": "Process: (disposition, evidence id) pairs opened before citing and bearing on the entry / pairs "
                          "cited (0 when nothing is cited).",
    "redundant_calls": "Process: tool calls repeating an earlier call's tool and canonical arguments.",
    "steps_to_first_flag": "Process: steps before the first flag; null when nothing was flagged.",
    "baseline_before_claim": "Process: whether compute_stats returned statistics before the first 'unusual' claim; null "
                             "when no such claim was made.",
    "premature_disposition": "Process: non-void dispositions issued before all their entry's required (or clearing) evidence was opened.",
    "process": "Process score in [0, 1]: the mean over planted entries of the evidence quality of each right final "
               "decision, scaled for redundant calls and a claim without baseline (docs/scoring.md).",
    "n_dispositions": "Entries with a final, non-void disposition.",
    "n_flags": "Entries whose final, non-void disposition is a flag.",
}

#: Per dataset, per field: what the column holds. Every field of every schema has one (tests/test_docs.py).
DESCRIPTIONS: dict[str, dict[str, str]] = {
    "steps": {
        **_KEY_DESCRIPTIONS,
        "step_idx": "Step number within the episode, 0 upwards; one step per tool call (a reply without a tool call is a step with tool '').",
        "tool": "The tool called, as the agent named it ('' for a reply without a tool call; an unknown name is an error step).",
        "args": "The call's arguments as canonical JSON text (sorted keys, no spaces), or the raw text when they were not valid JSON.",
        "observation_hash": "sha256 (hex) of the observation text below, encoded as UTF-8: the compact JSON of the tool's "
                            "answer (or error) exactly as the environment returned it. Present even when the text is not kept.",
        "tokens_in": "Prompt tokens of the model reply that made this call, on the reply's first call (0 on its other calls); "
                     "null for agents that use no model (the built-in agents). Every prompt token of the request: "
                     "tokens read from or written to the provider's prompt cache are included (tokens_cached_in and "
                     "tokens_cache_write say how many), as OpenAI's prompt_tokens counts them.",
        "tokens_cached_in": "The part of tokens_in the provider read from its prompt cache (OpenAI-compatible "
                            "usage.prompt_tokens_details.cached_tokens, DeepSeek prompt_cache_hit_tokens, Anthropic "
                            "cache_read_input_tokens), priced at price.cached_input_per_mtok; as tokens_in on the "
                            "reply's other calls and for agents without a model.",
        "tokens_cache_write": "The part of tokens_in written to the provider's prompt cache (Anthropic "
                              "cache_creation_input_tokens; 0 for OpenAI-compatible servers, which bill no writes), "
                              "priced at price.cache_write_per_mtok; as tokens_in elsewhere.",
        "tokens_reasoning": "The part of tokens_out the model spent reasoning, where the endpoint reports it "
                            "(OpenAI-compatible usage.completion_tokens_details.reasoning_tokens), on the reply's first "
                            "call (0 on its other calls); null when not reported (Anthropic folds thinking into "
                            "output_tokens) and for agents that use no model.",
        "elided_results": "Tool results the LLM agent elided from its conversation (replaced by a one-line stub saying how "
                          "to fetch each again) before the request of the reply that made this call, to stay within "
                          "context_window (context_strategy elide_oldest, or after an endpoint's context-length "
                          "rejection); on the reply's first call (0 on its other calls); null for agents that use no "
                          "model (docs/models.md, Context management).",
        "observations_cut": "Observations the LLM agent cut at max_observation_chars (its safety net behind the "
                            "environment's paging) before the request of the reply that made this call; as "
                            "elided_results. 0 when every tool result came within the budget, as paged results do.",
        "cache_hit": "Whether the model reply that made this call came from the response cache (execution.response_cache: "
                     "no request sent, cost 0, the original answer's token counts and text); null for agents that use "
                     "no model.",
        "tokens_out": "Completion tokens of the model reply, as tokens_in; null for agents that use no model.",
        "latency_ms": "Wall time of the model reply in milliseconds, on the reply's first call (0 on its other calls); "
                      "null for agents that report none (the built-in random, naive and careful agents).",
        "reasoning_trace": "The model's reasoning text for the reply, when the endpoint returns one; else null.",
        "is_error": "Whether the call failed (unknown tool, bad arguments, a withheld tool): the observation is then an error.",
        "timestamp": "When the environment answered the call (UTC).",
        "observation": "The observation text the agent received; null when output.keep_observations is false.",
    },
    "episodes": {
        **_KEY_DESCRIPTIONS,
        "agent": "Who played: the built-in agent's name (random, naive, careful, or a test agent) or provider:model for an endpoint.",
        "tier": "The task's tier, L1 ... L4 (sets the default weights and judges per episode).",
        "status": "completed (played to submit or the step budget), failed (timeout, model error, a worker lost on every attempt) or skipped (not started: a budget, budget_usd or models[].budget_usd, would have been passed; termination says which and by how much; a resume with a higher budget plays it, and the report compares models only on cells every model played).",
        "termination": "Why the episode ended: submitted, step_budget, context_overflow, model_error: ..., timeout: ..., "
                       "refusal: ... (the model declined), no_tool_call: ... (replies in a row without a tool call; "
                       "docs/models.md), budget: ... (models[].episode_budget_usd stopped the episode, or, with "
                       "status skipped, budget_usd or models[].budget_usd kept it from starting), or error.",
        "error": "The error of a failed episode; null for a completed or skipped one.",
        "world_hash": "sha256 (hex) of the generated world: the same (task, seed, knobs) gives the same hash on any machine.",
        "world_version": "The task's world version (WORLD_VERSION, docs/tasks.md 'World versions') the episode was "
                         "played on; the report never pools two versions of a task. Null in rows written before "
                         "versions were recorded.",
        "run_config": "The episode's run-config contract as JSON text (task_id, tier, seed, generator, tools_enabled, "
                      "tools_withheld, step_budget, scoring, sweep; docs/environment_spec.md). Parse it with json.loads "
                      "or DuckDB's json functions.",
        "prompt_injection": "Whether the world planted prompt-injection text (the prompt_injection knob of run_config.generator).",
        "n_steps": "Steps played (rows of this episode in steps).",
        "n_errors": "Steps whose call failed (is_error).",
        "tokens_in": "Prompt tokens summed over the episode's model replies, cache reads and writes included; null for "
                     "agents that use no model.",
        "tokens_cached_in": "Prompt tokens read from the provider's prompt cache, summed over the episode's replies "
                            "(part of tokens_in); null for agents that use no model.",
        "tokens_cache_write": "Prompt tokens written to the provider's prompt cache, summed over the episode's replies "
                              "(part of tokens_in); null for agents that use no model.",
        "tokens_reasoning": "Reasoning tokens summed over the episode's replies that reported them (part of "
                            "tokens_out); null when no reply reported any.",
        "cache_hits": "Model replies of the episode answered from the response cache (execution.response_cache; they "
                      "cost 0 and keep their original token counts, which tokens_in/tokens_out include); null for "
                      "agents that use no model.",
        "tokens_out": "Completion tokens summed over the episode's model replies; null for agents that use no model.",
        "cost_usd": "Model cost of the episode in US dollars from the model entry's price: uncached input, cache reads "
                    "and cache writes each at their own price, plus output (0 without a price or a model).",
        "judge_cost_usd": "Cost of judging the episode in US dollars (0 for judges that use no model).",
        "wall_s": "Wall time of the episode in seconds, world generation included.",
        "started_at": "When the worker started the episode (UTC).",
        "finished_at": "When the worker finished the episode (UTC).",
        **_METRIC_DESCRIPTIONS,
        "extra_metrics": "Task-specific metrics of the task's outcome adjustment as JSON text (an object; {} when the "
                         "task has none; docs/tasks.md).",
        "rationale": "Rationale score in [0, 1]: the median of the successful judges' rationale_score (judgments); null "
                     "when no judge succeeded. A score here, whereas dispositions.rationale is the agent's text.",
        "judge_spread": "Max minus min of the successful judges' rationale scores (0 with one judge); null when none succeeded.",
        "judges_ok": "Judges that returned a judgment.",
        "judges_failed": "Judges that failed (their error is in judgments.error).",
        "score": "Combined score: w_outcome outcome + outcome (w_process process + w_rationale rationale) with the task's "
                 "weights (run_config.scoring.weights); null when the rationale is null.",
        "worker": "The episode worker that played it: <first 8 hex characters of the Ray node id>:<process id>.",
        "package_version": "jeval_ray version that wrote the row.",
    },
    "dispositions": {
        **_KEY_DESCRIPTIONS,
        "step_idx": "The step at which the agent made the disposition.",
        "entry_id": "The journal entry disposed of.",
        "decision": "flag or clear.",
        "criteria": "The criteria code the agent gave (from the brief), e.g. a flag's reason; null when none was given.",
        "evidence": "The evidence ids the agent cited: documents (DOC-0007), master-data tables (master:users) or entry ids.",
        "rationale": "The agent's free-text rationale for the disposition (what the judges grade). Text here, whereas "
                     "episodes.rationale is the judges' score.",
        "amount": "The amount the agent stated (scored only for a misstatement criterion of a task that asks for "
                  "amounts); else null.",
        "fabricated": "Whether the disposition cites an id not opened at an earlier step (void: it counts in fabrications).",
        "is_final": "Whether this is the entry's last disposition in the episode (the one the verifier scores).",
        "is_exception": "Ground truth, not the agent's answer: whether the entry is a planted defect of the world "
                        "(the verifier's positives). Written after the episode ends; agents never see it.",
    },
    "judgments": {
        **_KEY_DESCRIPTIONS,
        "judge": "The judge function (scoring.judges of the config, e.g. reference).",
        "judge_idx": "The judge's index among the episode's judges (0 upwards; L4 tasks have 3 by default).",
        "rubric": "Rubric id, e.g. global_rubric_v1 (jeval_ray/scoring/rubrics/).",
        "judge_version": "The judge's own version (the reference judge's rules, e.g. reference-2): judgments of "
                         "different versions are not mixed.",
        "status": "ok (scored), unscored (an LLM judge gave no valid answer within its re-asks, its endpoint failed "
                  "for good, or the judge budget was spent; the reason is in error; never counted as zero) or failed "
                  "(the judge raised or its worker died).",
        "rationale_score": "This judge's rationale score in [0, 1]: the mean over the planted entries of (sum of rubric "
                           "items / 20) for each right final decision (docs/scoring.md); null when it failed.",
        "item_scores": "JSON text: per final disposition, the rubric items' scores (0-4) this judge gave.",
        "overall_comment": "The judge's overall comment; null when it gave none.",
        "error": "Why the judge failed or left the judgment unscored (invalid_output: ..., model_error: ..., "
                 "budget: ...); null when it succeeded.",
        "tokens_in": "Prompt tokens the judge used (0 for judges that use no model).",
        "tokens_out": "Completion tokens the judge used (0 for judges that use no model).",
        "cost_usd": "The judge's model cost in US dollars (0 for judges that use no model).",
        "latency_ms": "The judge's wall time in milliseconds (0 when not measured).",
    },
}


def _described(name: str, schema: pa.Schema) -> pa.Schema:
    """``schema`` with each field's description as its metadata (a field without one keeps none)."""
    notes = DESCRIPTIONS.get(name, {})
    return pa.schema([f.with_metadata({DESCRIPTION_KEY: notes[f.name].encode()}) if f.name in notes else f
                      for f in schema], metadata=schema.metadata)


STEPS = _described("steps", STEPS)
EPISODES = _described("episodes", EPISODES)
DISPOSITIONS = _described("dispositions", DISPOSITIONS)
JUDGMENTS = _described("judgments", JUDGMENTS)

#: the columns that identify a judgments row across re-scores (a second identical re-score adds nothing); the jury
#: is part of it so each jury's rows are complete under its own id (the report picks one jury)
JUDGMENT_KEY = ("episode_id", "attempt", "judge", "judge_idx", "judge_model", "rubric", "prompt_hash", "jury")

DATASETS: dict[str, pa.Schema] = {"steps": STEPS, "episodes": EPISODES, "dispositions": DISPOSITIONS, "judgments": JUDGMENTS}


def description(dataset: str, field: str) -> str | None:
    """The description of a column, as stored in the schema's field metadata."""
    meta = DATASETS[dataset].field(field).metadata or {}
    value = meta.get(DESCRIPTION_KEY)
    return value.decode() if value is not None else None
