"""The sweep config: one pydantic schema (YAML or JSON), its validation and its JSON Schema.

A sweep config names the tasks, the models (built-in agents or model endpoints), the seeds, the
conditions, knob overrides, scoring overrides, the execution resources and the output root.
``load_sweep_config`` turns any problem into ONE ``ConfigError`` whose message names the field and
the fix; the CLI prints it and exits with code 2 before anything is written or Ray is started.

A model entry is either a built-in agent::

    {name: careful, provider: builtin, agent: careful}

or an endpoint whose remaining fields are validated by ``jeval_ray.models.config.ModelConfig``::

    {name: gpt-4o-mini, provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY, rpm: 500}
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jeval_ray.errors import ConfigError
from jeval_ray.sweep._names import FULL, WITHHELD, _task_overrides
from jeval_ray.tasks import Weights

#: Built-in agents of the leaderboard (see ``jeval_ray.agents``).
LEADERBOARD_AGENTS: tuple[str, ...] = ("random", "naive", "careful")
#: Fault-injection / benchmark agents; accepted only with ``allow_test_agents: true`` (docs/sweep.md).
TEST_AGENTS: tuple[str, ...] = ("crash", "crash_once", "hang", "sleep")
#: Endpoint providers (their fields are validated by ``ModelConfig``).
ENDPOINT_PROVIDERS: tuple[str, ...] = ("openai", "anthropic")
PROVIDERS: tuple[str, ...] = ("builtin", *ENDPOINT_PROVIDERS)
#: Condition names with a built-in meaning.

DEFAULT_CONFIG_NAME = "local.yaml"


class ModelEntry(BaseModel):
    """One model of the sweep: a built-in agent, or an endpoint (extra fields go to ``ModelConfig``)."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1, description="Label of the model in records, partitions and the leaderboard.")
    provider: str = Field(default="builtin", description="builtin | openai | anthropic")
    agent: str | None = Field(default=None, description="Built-in agent (provider builtin): random | naive | careful.")
    agent_options: dict[str, Any] = Field(
        default_factory=dict, description="Options of a test agent (sleep: latency_ms, steps; hang: hang_s).")

    def endpoint_fields(self) -> dict[str, Any]:
        """The fields handed to ``ModelConfig`` (everything but ``agent``/``agent_options``)."""
        d = self.model_dump(exclude={"agent", "agent_options"})
        d.update(self.model_extra or {})
        return d

    def fingerprint(self) -> str:
        """What makes two entries with one name different models (rate limits and keys excluded)."""
        d = self.model_dump()
        d.update(self.model_extra or {})
        for k in ("name", "api_key_env", "rpm", "tpm", "max_concurrency", "timeout_s", "max_attempts",
                  "max_total_wait_s", "backoff_base_s", "backoff_max_s", "price", "budget_usd"):
            d.pop(k, None)
        return json.dumps(d, sort_keys=True, default=str)


class ConditionSpec(BaseModel):
    """A named condition: withheld tools and/or knob overrides (``full`` and ``withheld`` are built in).

    ``{name: injected, knobs: {prompt_injection: true}}`` measures prompt injection as a condition
    of its own; it is scored and reported apart from ``full``, like a withheld-tool condition.
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:+-]+$")
    withhold: list[str] = Field(default_factory=list, description="Tools removed from every task of this condition.")
    knobs: dict[str, Any] = Field(default_factory=dict, description="Knob overrides of this condition, on top of "
                                  "knobs and task_knobs (e.g. {prompt_injection: true}).")


class JudgeModelEntry(BaseModel):
    """An LLM judge model: an endpoint entry like an agent model's (its fields are validated by
    ``ModelConfig``: provider, base_url, model, api_key_env, rpm/tpm, price, ...) plus how it is
    asked for JSON."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1, description="Name used in scoring.judges and in the judgments rows (judge_model).")
    provider: str = Field(default="openai", description="openai | anthropic")
    structured_output: Literal["auto", "json_schema", "json_object", "instructions"] = Field(
        default="auto", description="json_schema: send response_format {type: json_schema} with the answer's JSON "
        "Schema (OpenAI, vLLM, SGLang); json_object: response_format {type: json_object, schema} (llama.cpp servers "
        "constrain decoding to it); instructions: the schema goes into the prompt only; auto: for provider openai "
        "json_schema, falling back to json_object then instructions when the endpoint rejects one (remembered per "
        "endpoint for the run, recorded in the manifest), for anthropic instructions.")

    def entry(self) -> dict[str, Any]:
        d = self.model_dump()
        d.update(self.model_extra or {})
        return d


class ScoringConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    judge: str = Field(default="global_rubric_v1", description="Rubric id.")
    judges: list[str] = Field(default_factory=lambda: ["reference"], min_length=1,
                              description="The jury: 'reference', names of judge_models, or 'module:function' judges. "
                                          "An episode's judges_per_episode judges are consecutive names of this list from "
                                          "an offset fixed by the episode id; one name is asked that many times with "
                                          "different seeds.")
    judges_per_episode: int | None = Field(default=None, ge=1, description="null = 3 judges for an L4 task, else 1 (docs/environment_spec.md).")
    judge_models: list[JudgeModelEntry] = Field(default_factory=list, description="LLM judge endpoints (docs/scoring.md).")
    judge_max_reasks: int = Field(default=2, ge=0, le=10, description="Re-asks after an invalid judge answer before "
                                  "the judgment is recorded as unscored.")
    rationale_max_chars: int = Field(default=2000, ge=100, description="A rationale is cut to this many characters "
                                     "before an LLM judge sees it.")
    judge_budget_usd: float | None = Field(default=None, gt=0, description="Spending cap of the LLM judges of this run "
                                           "(USD at the judge models' prices). Once spent, further LLM judgments are "
                                           "recorded as unscored (reason 'budget'); judgments already in flight finish. "
                                           "null = no cap.")
    weights: Weights | None = Field(default=None, description="Override every task's outcome/process/rationale weights.")
    task_weights: dict[str, Weights] = Field(default_factory=dict, description="Per-task weight overrides.")

    def judging(self) -> dict[str, Any]:
        """What the judge pool needs (``sweep.judges.JudgePanel``) and what identifies the jury."""
        return {"rubric": self.judge, "judges": list(self.judges), "judges_per_episode": self.judges_per_episode,
                "models": {m.name: m.entry() for m in self.judge_models if m.name in self.judges},
                "max_reasks": self.judge_max_reasks, "rationale_max_chars": self.rationale_max_chars}


class ExecutionConfig(BaseModel):
    """How the sweep uses the cluster. Resources are explicit so a 2-core machine never deadlocks."""

    model_config = ConfigDict(extra="forbid")
    max_in_flight: int = Field(default=256, ge=1, description="Episodes dispatched and not yet judged and buffered.")
    episode_workers: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(default="auto", description="auto = one per CPU of the cluster.")
    episodes_per_worker: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(
        default="auto",
        description="Concurrent episodes hosted by one async EpisodeWorker. auto = max_in_flight / episode workers "
                    "(rounded up), so max_in_flight episodes can be played at once; a number below that caps the "
                    "sweep at workers x episodes_per_worker (the sweep warns).")
    batch_size: int | Literal["auto"] = Field(
        default="auto",
        description="Episodes sent to a worker in one Ray call. auto = 1 for endpoint models (long-lived; judged as "
                    "each finishes); for built-in agents (CPU-bound, a few ms each: per-call overhead would dominate) "
                    "up to 32 while much of the grid is left, shrinking to 4 as it runs out.")
    queue_per_worker: Annotated[int, Field(ge=0)] | Literal["auto"] = Field(
        default="auto",
        description="Episodes sent to an episode worker beyond the episodes_per_worker it plays at once. They wait in "
                    "the worker and start the moment one of its episodes ends (no round trip to the driver); while "
                    "they wait, the worker builds their worlds in its idle time. Each holds its world while it waits "
                    "(about 0.2 MB at default knobs). auto = episodes_per_worker when a model waits on latency (an "
                    "endpoint, or the simulated 'sleep' agent), else 0 (CPU-bound built-in agents keep their "
                    "worker busy without one). 0 = none.")
    episode_worker_cpus: float = Field(default=0.5, gt=0, description="num_cpus reserved per EpisodeWorker (fractions OK).")
    episode_worker_resources: dict[str, float] = Field(default_factory=dict, description="Custom Ray resources per worker.")
    world_cache: int = Field(
        default=16, ge=0,
        description="Generated worlds each episode worker keeps (least recently used go first). The grid lists the "
                    "models and conditions of one (task, seed) one after another, and a withheld tool does not change "
                    "the world, so each world is generated about once per worker instead of once per episode. Worlds "
                    "are immutable; episodes stay isolated. A world at default knobs holds about 0.2 MB. "
                    "0 = generate every episode's world.")
    world_cache_entries: int = Field(
        default=1_000_000, ge=0,
        description="Entries the worlds kept by one episode worker may hold in all (least recently used go first; "
                    "the last world is always kept). A world of a million entries holds about 0.45 GB, so world_cache "
                    "alone would keep 7 GB of them in each worker; at default knobs (a few hundred to two thousand "
                    "entries a world) this bound is never reached.")
    isolation_workers: int = Field(default=1, ge=1, description="Workers that run last attempts one at a time.")
    judge_workers: int = Field(default=1, ge=1)
    judge_worker_cpus: float = Field(default=0.1, gt=0)
    judge_worker_resources: dict[str, float] = Field(default_factory=dict)
    judges_in_flight: int = Field(default=128, ge=1)
    judge_batch_size: int = Field(default=32, ge=1, description="Judge packets sent to a judge worker in one Ray call.")
    max_attempts: int = Field(default=3, ge=1, le=20, description="Attempts per episode when its worker dies.")
    episode_timeout_s: float | None = Field(
        default=1800.0, gt=0,
        description="Deadline of one episode (it ends as a failed 'timeout' row). The driver's watchdog also kills a "
                    "worker whose batch overruns its episodes' deadlines by watchdog_grace_s (a wedged agent that "
                    "never yields); its episodes are retried like those of any dead worker. null = no deadline.")
    watchdog_grace_s: float = Field(default=60.0, gt=0, description="Slack the watchdog allows beyond episode deadlines.")
    scheduling: Literal["default", "spread"] = Field(default="default", description="spread = place workers across nodes.")
    worker_start_timeout_s: float = Field(default=300.0, gt=0, description="Abort when no worker can start for this long.")
    response_cache: str | None = Field(
        default=None, description="Response cache of the endpoint models' calls: a local directory or a pyarrow "
        "filesystem URI (e.g. under the output root, so a cluster's nodes share it). A call seen before (same request, "
        "episode seed and sample) is answered from it without a request: no rate limit, cost 0, its original token "
        "counts (steps.cache_hit). A crashed episode or a new run over a finished grid pays nothing twice. null = off "
        "(the CLI's --cache sets it). Inspect and trim with python -m jeval_ray.cache list|prune.")


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    root: str = Field(default="runs", description="Local path or pyarrow filesystem URI (s3://bucket/prefix).")
    relative_root_in_ray_job: bool = Field(
        default=False,
        description="Allow a relative output root (this field's default 'runs', or a relative --out) when the sweep "
                    "runs as a Ray job. Ray resolves it inside the job's temporary working directory, which it deletes "
                    "with the session, so by default such a sweep is refused (exit 2) before it starts; set true only "
                    "when that directory is what you want (e.g. a test that reads the run before the session ends).")
    keep_observations: bool = Field(default=True, description="Store each step's observation text.")
    flush_episodes: int = Field(default=64, ge=1, description="Flush a task/model partition after this many episodes.")
    flush_seconds: float = Field(default=20.0, gt=0, description="Flush every buffer at least this often.")
    flush_mb: float = Field(default=64.0, gt=0, description="Flush every buffer when this much is buffered.")
    writer_threads: int = Field(default=2, ge=0, le=32,
                                description="Threads that write Parquet files in the background while the sweep "
                                            "goes on (0 = write in the scheduling loop itself).")


class RayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    address: str | None = Field(default=None, description="Cluster to join from one of its nodes: 'auto' or the head's "
                                "GCS address host:6379 (Ray Client ray:// is refused; submit a Ray job instead, "
                                "cluster/README.md). null = RAY_ADDRESS or a local ray.init().")
    num_cpus: int | None = Field(default=None, ge=1, description="Local ray.init only.")
    object_store_memory_mb: int | None = Field(default=512, ge=80, description="Local ray.init only.")
    include_dashboard: bool = False
    log_to_driver: bool = True


class SweepConfig(BaseModel):
    """A sweep: ``tasks x models x seeds x conditions`` episodes, judged and written as Parquet."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="sweep", description="A label stored in the manifest.")
    tasks: Literal["available", "all"] | list[str] = Field(
        default="available", description="Task ids (JE-1 ... JE-16), or 'available' for every playable task.")
    models: list[ModelEntry] = Field(min_length=1)
    seeds: int | list[int] = Field(default=5, description="A count (seeds 0..n-1) or an explicit list.")
    conditions: list[str | ConditionSpec] = Field(
        default_factory=lambda: [FULL, WITHHELD],
        description="'full', 'withheld' (each task's withheld_variant) or {name, withhold: [tools], knobs: {...}}.")
    knobs: dict[str, Any] = Field(default_factory=dict, description="Difficulty-knob overrides for every task.")
    task_knobs: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Per-task knob overrides.")
    step_budget: int | None = Field(default=None, ge=1, description="null = each task's budget.")
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    allow_test_agents: bool = Field(default=False, description="Allow the fault-injection agents crash, crash_once, hang, sleep.")
    budget_usd: float | None = Field(
        default=None, gt=0, description="Spending cap of all endpoint models' agent episodes of this run together, over "
        "all its invocations (USD). Admitted like each model's budget_usd (spent + in-flight forecast + the episode's "
        "forecast); once it would be passed no new episode of any model starts and the rest are written as status "
        "'skipped'. Judges are apart: scoring.judge_budget_usd. null = no cap.")

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v):
        if isinstance(v, int) and v < 1:
            raise ValueError("seeds must be >= 1")
        if isinstance(v, list):
            if not v:
                raise ValueError("seeds must list at least one seed")
            if len(set(v)) != len(v):
                raise ValueError("seeds must not repeat")
            if any(s < 0 for s in v):
                raise ValueError("seeds must be >= 0")
        return v

    @model_validator(mode="after")
    def _unique_names(self) -> "SweepConfig":
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"model names must be unique; repeated: {', '.join(dup)}")
        conds = [c if isinstance(c, str) else c.name for c in self.conditions]
        if len(set(conds)) != len(conds):
            raise ValueError("condition names must be unique")
        return self

    # ------------------------------------------------------------------ derived
    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def model_names(self) -> list[str]:
        return [m.name for m in self.models]

    def model(self, name: str) -> ModelEntry:
        return next(m for m in self.models if m.name == name)

    def has_agent_budgets(self) -> bool:
        """Whether the run bounds its agents' spend: ``budget_usd`` or a model's ``budget_usd``."""
        return self.budget_usd is not None or any((m.model_extra or {}).get("budget_usd") is not None
                                                  for m in self.models)

    def seed_warning(self) -> str | None:
        n = len(self.seed_list)
        if n < 5:
            return f"only {n} seed(s): fewer than 5 seeds, so variance is not measurable (set seeds: 5 or more)"
        return None

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


# ---------------------------------------------------------------------------- loading
def default_config_text() -> str:
    """The embedded default sweep (``configs/local.yaml``, shipped as ``jeval_ray/sweep/local.yaml``)."""
    return resources.files("jeval_ray.sweep").joinpath(DEFAULT_CONFIG_NAME).read_text(encoding="utf-8")


def parse_config_text(text: str, source: str = "<config>") -> dict:
    try:
        data = yaml.safe_load(text)  # JSON is YAML, so one parser reads both
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML/JSON ({exc}). Fix the syntax.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a sweep config must be a mapping with at least 'models'; got {type(data).__name__}")
    return data


def load_config_file(path: str | os.PathLike | None) -> tuple[dict, str]:
    """The raw mapping of a config file (or of the embedded default when ``path`` is None)."""
    if path is None:
        return parse_config_text(default_config_text(), "embedded default (configs/local.yaml)"), "embedded default"
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config: file {str(p)!r} does not exist. Fix: pass the path of a YAML or JSON sweep config.")
    return parse_config_text(p.read_text(encoding="utf-8"), str(p)), str(p)


def load_sweep_config(path: str | os.PathLike | None = None, *, check_env: bool = True) -> SweepConfig:
    """Load and fully validate a sweep config; raises one ``ConfigError`` naming the field and the fix."""
    data, source = load_config_file(path)
    return validate_config(data, source=source, check_env=check_env)


def validate_config(data: dict | SweepConfig, *, source: str = "<config>", check_env: bool = True) -> SweepConfig:
    """Schema validation plus every semantic check (tasks, agents, tools, knobs, keys)."""
    if isinstance(data, SweepConfig):
        cfg = data
    else:
        try:
            cfg = SweepConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {_pydantic_message(exc)}") from None
    try:
        check_semantics(cfg, check_env=check_env)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return cfg


_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "greater_than_equal": "raise it",
    "greater_than": "raise it",
    "less_than_equal": "lower it",
    "too_short": "add at least one item",
}


#: Field-specific fixes, by the start of the field path.
_FIELD_FIXES = {
    "seeds": "set seeds to a count >= 1 (5 or more to measure variance) or a list of distinct seeds >= 0",
    "execution.episode_workers": "use a positive integer or 'auto'",
    "execution.episodes_per_worker": "use a positive integer or 'auto'",
    "execution.queue_per_worker": "use 0 (no queue), a positive integer or 'auto'",
    "tasks": "use 'available', 'all' or a list of task ids such as [JE-1, JE-3]",
    "conditions": "use 'full', 'withheld' or {name: ..., withhold: [tools]}",
    "models": "give every model a unique name",
}


def _pydantic_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = _loc(err["loc"])
    typ = err["type"]
    if typ == "extra_forbidden":
        parent = err["loc"][:-1]
        known = _known_fields(parent)
        return f"unknown field {loc!r}. Fix: remove it or check its spelling{f' (known: {known})' if known else ''}."
    msg = err["msg"].removeprefix("Value error, ")
    fix = _FIXES.get(typ, "correct the value")
    if fix == "correct the value" or typ == "missing":
        fix = next((f for k, f in _FIELD_FIXES.items() if loc == k or loc.startswith(k + "[") or loc.startswith(k + ".")), fix)
        if typ == "missing":
            fix = f"add it ({fix})" if fix != "add it" else fix
    if "sum to 1" in msg:
        fix = "make outcome + process + rationale equal 1"
    got = f" (got {err['input']!r})" if typ not in ("missing",) and not isinstance(err.get("input"), dict) else ""
    return f"field {loc or '<top level>'!r}: {msg}{got}. Fix: {fix}."


def _loc(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("int", "constrained-int", "list[int]", "str", "ConditionSpec", "list[str]",
                      "literal['available','all']", "function-after[_check(), str]",
                      "function-after[_check(), ConditionSpec]"):
            continue  # union-branch markers carry no meaning for the user
        else:
            out += ("." if out else "") + str(part)
    return out


def _known_fields(parent) -> str:
    model: Any = SweepConfig
    for part in parent:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return ""
        ann = field.annotation
        model = next((a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)), ann)
        if getattr(model, "__origin__", None) is list:
            model = model.__args__[0]
    return ", ".join(getattr(model, "model_fields", {})) if isinstance(model, type) else ""


def check_semantics(cfg: SweepConfig, *, check_env: bool = True) -> None:
    """Checks the schema cannot express: they need the task catalogue, the agents and the environment."""
    from jeval_ray.sweep.grid import resolve_conditions, resolve_tasks

    tasks = resolve_tasks(cfg)
    for i, m in enumerate(cfg.models):
        _check_model(cfg, i, m, check_env)
    _check_budget(cfg)
    # knobs: validated against every task (unknown knob, out-of-range value)
    from jeval_ray.tasks import resolve_knobs

    for key in cfg.task_knobs:
        tid = _task_id_or_error(key, f"task_knobs.{key}")
        if tid not in [t.id for t in tasks]:
            raise ConfigError(f"field 'task_knobs.{key}': task {tid} is not in this sweep's tasks. Fix: remove it or add {tid} to tasks.")
    for key in cfg.scoring.task_weights:
        _task_id_or_error(key, f"scoring.task_weights.{key}")
    for t in tasks:
        overrides = {**cfg.knobs, **_task_overrides(cfg.task_knobs, t.id)}
        where = f"task_knobs.{t.id}" if _task_overrides(cfg.task_knobs, t.id) else "knobs"
        try:
            resolve_knobs(t.id, overrides)
        except ConfigError as exc:
            raise ConfigError(f"field {where!r}: {exc}. Fix: use a known knob with a valid value.") from None
    resolve_conditions(cfg, tasks)
    check_judges(cfg.scoring, check_env=check_env)
    from jeval_ray.scoring import load_rubric

    try:
        load_rubric(cfg.scoring.judge)
    except Exception:  # noqa: BLE001 - any failure to load means the id is wrong
        raise ConfigError(f"field 'scoring.judge': unknown rubric {cfg.scoring.judge!r}. Fix: use global_rubric_v1.") from None


def check_judges(scoring: ScoringConfig, *, check_env: bool = True, where: str = "scoring") -> None:
    """The jury's names resolve, every judge model is a valid endpoint, its key is set (``check_env``)."""
    from jeval_ray.sweep.judges import JUDGES, is_known_judge

    def f(name: str) -> str:
        return f"{where}.{name}" if where else name

    names = [m.name for m in scoring.judge_models]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"field '{f('judge_models')}': judge model names must be unique; repeated: {', '.join(dup)}. "
                          "Fix: rename them.")
    for i, m in enumerate(scoring.judge_models):
        at = f(f"judge_models[{i}]")
        if m.name in JUDGES:
            raise ConfigError(f"field '{at}.name': {m.name!r} is a built-in judge. Fix: choose another name.")
        if m.provider not in ENDPOINT_PROVIDERS:
            raise ConfigError(f"field '{at}.provider': unknown provider {m.provider!r} for judge model {m.name!r}. "
                              f"Fix: use one of {', '.join(ENDPOINT_PROVIDERS)}.")
        for per_agent in ("budget_usd", "episode_budget_usd"):
            if per_agent in (m.model_extra or {}):
                raise ConfigError(f"field '{at}.{per_agent}' (judge model {m.name!r}): {per_agent} bounds a model's "
                                  f"agent episodes, not judgments. Fix: remove it; the judges' cap is "
                                  f"{f('judge_budget_usd')}.")
        if m.structured_output in ("json_schema", "json_object") and m.provider == "anthropic":
            raise ConfigError(f"field '{at}.structured_output': the Anthropic Messages API has no response_format "
                              f"(judge model {m.name!r}). Fix: use auto or instructions.")
        from jeval_ray.models.config import ModelConfig

        try:
            mc = ModelConfig.model_validate({k: v for k, v in m.entry().items() if k != "structured_output"})
        except ValidationError as exc:
            loc, msg, fix = _endpoint_error(exc)
            raise ConfigError(f"field '{at}.{loc}' (judge model {m.name!r}): {msg}. Fix: {fix}.") from None
        if check_env and mc.api_key_env and not os.environ.get(mc.api_key_env, "").strip():
            raise ConfigError(f"field '{at}.api_key_env': environment variable {mc.api_key_env} is not set (judge model "
                              f"{m.name!r}). Fix: export {mc.api_key_env}=<your key> before running, or remove api_key_env "
                              "for an endpoint without auth.")
    for name in scoring.judges:
        if name not in names and not is_known_judge(name):
            known = ", ".join(sorted(JUDGES) + names)
            raise ConfigError(f"field '{f('judges')}': unknown judge {name!r}. "
                              f"Fix: use one of {known}, a name of {f('judge_models')}, or an importable 'module:function'.")
    if scoring.judge_budget_usd is not None and not any(n in names for n in scoring.judges):
        raise ConfigError(f"field '{f('judge_budget_usd')}': no LLM judge in {f('judges')} spends anything. "
                          "Fix: remove judge_budget_usd or add a judge model to the jury.")


def _endpoint_error(exc: ValidationError) -> tuple[str, str, str]:
    """``(field, message, fix)`` of a ``ModelConfig`` validation error. A rule across fields (the reasoning
    rules) is raised as ``"<field>: <message>. Fix: <fix>"`` and named by that field."""
    err = exc.errors()[0]
    loc = _loc(err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    fix = "remove it or check its spelling" if err["type"] == "extra_forbidden" else _FIXES.get(err["type"], "correct the value")
    named = re.match(r"^([a-z_]+): (.*?)(?:\. Fix: (.*))?$", msg, re.S)
    if not loc and named:
        loc, msg, fix = named.group(1), named.group(2), named.group(3) or fix
    return loc, msg, fix


def _task_id_or_error(key: str, field: str) -> str:
    from jeval_ray.tasks import TASK_IDS, get_task

    try:
        return get_task(key).id
    except ConfigError:
        raise ConfigError(f"field {field!r}: unknown task {key!r}. Fix: use one of {', '.join(TASK_IDS)}.") from None


def _priced(price) -> bool:
    return any((price.input_per_mtok, price.output_per_mtok, price.cached_input_per_mtok, price.cache_write_per_mtok))


def _check_budget(cfg: SweepConfig) -> None:
    """``budget_usd`` (the sweep's) needs a priced endpoint model to bound."""
    if cfg.budget_usd is None:
        return
    from jeval_ray.models.config import Price

    if not any(m.provider != "builtin" and _priced(Price.model_validate((m.model_extra or {}).get("price") or {}))
               for m in cfg.models):
        raise ConfigError("field 'budget_usd': no endpoint model in models has a price, so nothing spends and the "
                          "budget never binds (the judges' cap is scoring.judge_budget_usd). Fix: remove budget_usd, or "
                          "add an endpoint model with a price.")


def _check_model(cfg: SweepConfig, i: int, m: ModelEntry, check_env: bool) -> None:
    where = f"models[{i}]"
    if m.provider not in PROVIDERS:
        raise ConfigError(f"field '{where}.provider': unknown provider {m.provider!r} for model {m.name!r}. "
                          f"Fix: use one of {', '.join(PROVIDERS)}.")
    if m.provider == "builtin":
        if m.model_extra:
            raise ConfigError(f"field '{where}': a builtin model takes only name, provider, agent, agent_options; "
                              f"got {', '.join(sorted(m.model_extra))}. Fix: remove them or set provider to openai/anthropic.")
        allowed = LEADERBOARD_AGENTS + (TEST_AGENTS if cfg.allow_test_agents else ())
        if m.agent is None:
            raise ConfigError(f"field '{where}.agent': a builtin model needs an agent. Fix: set agent to one of {', '.join(LEADERBOARD_AGENTS)}.")
        if m.agent in TEST_AGENTS and not cfg.allow_test_agents:
            raise ConfigError(f"field '{where}.agent': {m.agent!r} is a fault-injection test agent. "
                              "Fix: set allow_test_agents: true (tests and benchmarks only) or use random, naive or careful.")
        if m.agent not in allowed:
            raise ConfigError(f"field '{where}.agent': unknown built-in agent {m.agent!r}. Fix: use one of {', '.join(allowed)}.")
        return
    if m.agent is not None:
        raise ConfigError(f"field '{where}.agent': only builtin models take an agent. Fix: remove agent or set provider: builtin.")
    if m.agent_options:
        unknown = sorted(set(m.agent_options) - {"crash_after_calls"})
        if unknown or not cfg.allow_test_agents:
            raise ConfigError(f"field '{where}.agent_options': an endpoint model takes only the test option "
                              "crash_after_calls, with allow_test_agents: true. Fix: remove agent_options"
                              f"{' (' + ', '.join(unknown) + ')' if unknown else ''}.")
    try:
        from jeval_ray.models.config import ModelConfig
    except ImportError:
        raise ConfigError(f"field '{where}.provider': provider {m.provider!r} is not yet supported in this build. "
                          "Fix: use provider: builtin.") from None
    try:
        mc = ModelConfig.model_validate(m.endpoint_fields())
    except ValidationError as exc:
        loc, msg, fix = _endpoint_error(exc)
        raise ConfigError(f"field '{where}.{loc}' (model {m.name!r}): {msg}. Fix: {fix}.") from None
    if mc.budget_usd is not None and not _priced(mc.price):
        raise ConfigError(f"field '{where}.budget_usd' (model {m.name!r}): the model has no price, so it spends nothing "
                          "and the budget never binds. Fix: set its price (price.input_per_mtok, price.output_per_mtok) or "
                          "remove budget_usd.")
    if check_env and mc.api_key_env and not os.environ.get(mc.api_key_env, "").strip():
        raise ConfigError(f"field '{where}.api_key_env': environment variable {mc.api_key_env} is not set (model {m.name!r}). "
                          f"Fix: export {mc.api_key_env}=<your key> before running, or remove api_key_env for an endpoint without auth.")


#: the command-line flags that narrow a config's grid, and the config field each narrows
NARROWING_FLAGS = {"tasks": "--tasks", "models": "--models", "seeds": "--seeds", "conditions": "--conditions"}


def narrow_config(cfg: SweepConfig, *, tasks: str | None = None, models: str | None = None, seeds: str | None = None,
                  conditions: str | None = None) -> SweepConfig:
    """The config with its grid narrowed by the command line (``--tasks JE-1,JE-3 --seeds 2`` ...).

    Each value may only pick from what the config already has (a quick run of part of a sweep,
    not a different sweep): task ids, model names and condition names as comma lists; seeds as
    the config writes them, ``N`` (the config's first N seeds) or a list ``0,3`` / ``[3]``.
    Raises one ``ConfigError`` naming the flag and the fix. The narrowed config is what the run
    records in its manifest.
    """
    from jeval_ray.sweep.grid import resolve_tasks
    from jeval_ray.tasks import get_task

    update: dict[str, Any] = {}
    if tasks is not None:
        have = [t.id for t in resolve_tasks(cfg)]
        picked = []
        for name in _comma_list(tasks, "--tasks", "a comma list of task ids such as JE-1,JE-3"):
            try:
                tid = get_task(name).id
            except ConfigError:
                tid = None
            if tid not in have:
                raise ConfigError(f"--tasks: {name!r} is not one of this config's tasks ({', '.join(have)}). "
                                  "Fix: pick from those, or add the task to tasks in the config.")
            if tid not in picked:
                picked.append(tid)
        update["tasks"] = [t for t in have if t in picked]
        update["task_knobs"] = {k: v for k, v in cfg.task_knobs.items() if _task_key_id(k) in picked}
    if models is not None:
        have = cfg.model_names
        picked = _pick(_comma_list(models, "--models", "a comma list of model names such as careful,naive"),
                       have, "--models", "model names", "models")
        update["models"] = [m for m in cfg.models if m.name in picked]
    if seeds is not None:
        update["seeds"] = _narrow_seeds(cfg, seeds)
    if conditions is not None:
        by_name = {c if isinstance(c, str) else c.name: c for c in cfg.conditions}
        picked = _pick(_comma_list(conditions, "--conditions", "a comma list of condition names such as full"),
                       list(by_name), "--conditions", "conditions", "conditions")
        update["conditions"] = [c for n, c in by_name.items() if n in picked]
    if not update:
        return cfg
    narrowed = cfg.model_copy(update=update)
    try:
        check_semantics(narrowed, check_env=False)  # keys were checked with the full config already
    except ConfigError as exc:
        flags = " ".join(NARROWING_FLAGS[k] for k in ("tasks", "models", "seeds", "conditions") if k in update)
        raise ConfigError(f"{flags}: the narrowed grid is not valid: {exc}") from None
    return narrowed


def _comma_list(value: str, flag: str, example: str) -> list[str]:
    items = [x.strip() for x in value.split(",")]
    if not value.strip() or any(not x for x in items):
        raise ConfigError(f"{flag}: {value!r} is not a list. Fix: pass {example}.")
    return items


def _pick(items: list[str], have: list[str], flag: str, what: str, field: str) -> list[str]:
    for name in items:
        if name not in have:
            raise ConfigError(f"{flag}: {name!r} is not one of this config's {what} ({', '.join(have)}). "
                              f"Fix: pick from those, or add it to {field} in the config.")
    return items


def _task_key_id(key: str) -> str | None:
    from jeval_ray.tasks import get_task

    try:
        return get_task(key).id
    except ConfigError:
        return None


def _narrow_seeds(cfg: SweepConfig, value: str) -> list[int]:
    """``--seeds``: ``N`` = the config's first N seeds; ``a,b`` or ``[a]`` = those seeds (each one of the config's)."""
    have = cfg.seed_list
    text = value.strip()
    if "," in text and not text.startswith("["):
        text = f"[{text}]"
    try:
        parsed = yaml.safe_load(text)
        SweepConfig.model_validate({"models": [{"name": "x", "agent": "careful"}], "seeds": parsed})
    except (yaml.YAMLError, ValidationError):
        parsed = None
    if isinstance(parsed, bool) or not isinstance(parsed, (int, list)):
        raise ConfigError(f"--seeds: {value!r} is neither a count nor a list of distinct seeds. Fix: pass a count such "
                          "as 2 (the config's first 2 seeds) or seeds such as 0,3 (one seed: [3]).")
    if isinstance(parsed, int):
        if parsed > len(have):
            raise ConfigError(f"--seeds: {parsed} is more than the config's {len(have)} seed(s). Fix: pass at most "
                              f"{len(have)}, or raise seeds in the config.")
        return have[:parsed]
    missing = [s for s in parsed if s not in have]
    if missing:
        raise ConfigError(f"--seeds: seed(s) {', '.join(map(str, missing))} are not among the config's seeds "
                          f"({_seed_text(have)}). Fix: pick from those, or add them to seeds in the config.")
    return [s for s in have if s in parsed]


def _seed_text(seeds: list[int]) -> str:
    if seeds == list(range(len(seeds))):
        return f"0..{len(seeds) - 1}"
    return ", ".join(map(str, seeds))


def json_schema() -> dict:
    """The JSON Schema of the sweep config (``python -m jeval_ray.sweep --schema``)."""
    schema = SweepConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "jeval_ray sweep config"
    return schema


__all__ = ["ConditionSpec", "ExecutionConfig", "JudgeModelEntry", "ModelEntry", "OutputConfig", "RayConfig",
           "ScoringConfig", "SweepConfig", "LEADERBOARD_AGENTS", "TEST_AGENTS", "PROVIDERS", "check_judges",
           "check_semantics", "default_config_text", "json_schema", "load_config_file", "load_sweep_config",
           "narrow_config", "validate_config"]
