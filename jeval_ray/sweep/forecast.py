"""What a sweep's model calls will cost before it runs: the per-task token profile and the forecast.

The **token profile** (``jeval_ray/sweep/data/token_profile.json``, shipped as package data, written
by ``bench/bench_profile.py``) holds, per task and condition, what the reference solver (the
built-in ``careful`` agent, played by the test server's brain over the OpenAI wire) used per
episode: requests, cumulative input tokens, the cached part of them, output tokens and the largest
single request, each as mean, median and p90 over the profile's seeds. Its ``meta`` says which
code, which seeds and which solver made it.

The **forecast** of a grid cell is the profile's mean for its (task, condition): the grid's sum of
means is the expected total, which a sum of medians would understate. Its dollars are the model
entry's price table applied to those tokens (cached input at ``cached_input_per_mtok``; for an
Anthropic model with ``prompt_caching`` the uncached input counted as cache writes); an episode
forecast above the model's ``episode_budget_usd`` is forecast at that cap, its tokens scaled alike
(the agent stops there). Built-in agents call no model: nothing is forecast for them.

``--forecast-from RUN``: an earlier run of the same model calibrates the profile: where that run
played a (task, condition), the model's own mean per episode is used; elsewhere the profile scaled
by the ratio of what the model used to what the profile forecast for the cells it played.

The caveat (printed with every forecast): the profile is the reference solver's. A real model
reads more or less than ``careful`` does, so the forecast is a scale, not a quote, until a run of
that model calibrates it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any, Iterable

PROFILE_FORMAT = "jeval_ray.token_profile/1"
PROFILE_RESOURCE = "data/token_profile.json"
#: The per-episode quantities a profile holds and a forecast adds up.
QUANTITIES = ("requests", "tokens_in", "tokens_cached_in", "tokens_out")
#: What a profile entry holds per quantity (largest_request holds the same).
STATS = ("mean", "median", "p90", "max")
CAVEAT = ("the profile is the reference solver's (the built-in careful agent through the test server, {solver}); "
          "a real model reads more or less than it does, so treat this as a scale, not a quote, until "
          "--forecast-from RUN calibrates it on an earlier run of the same model")


def summarise(values: list[float]) -> dict[str, float]:
    """mean, median, p90 (nearest rank) and max of ``values`` (all 0 when empty)."""
    if not values:
        return {s: 0.0 for s in STATS}
    xs = sorted(values)
    n = len(xs)
    mid = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    p90 = xs[max(0, math.ceil(0.9 * n) - 1)]
    return {"mean": sum(xs) / n, "median": mid, "p90": p90, "max": xs[-1]}


def profile_entry(episodes: list[dict]) -> dict:
    """One (task, condition) of a profile from per-episode measures (``QUANTITIES`` and
    ``largest_request`` per episode)."""
    entry: dict[str, Any] = {"episodes": len(episodes)}
    for q in (*QUANTITIES, "largest_request"):
        entry[q] = summarise([float(e.get(q) or 0) for e in episodes])
    return entry


@dataclass
class Profile:
    """A token profile: ``entries[(task_id, condition)]`` and the profile's ``meta``."""

    entries: dict[tuple[str, str], dict]
    meta: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        if d.get("format") != PROFILE_FORMAT:
            raise ValueError(f"not a token profile of format {PROFILE_FORMAT!r} (format: {d.get('format')!r})")
        entries = {(t, c): e for t, conds in d["tasks"].items() for c, e in conds.items()}
        return cls(entries, d.get("meta") or {})

    def to_dict(self) -> dict:
        tasks: dict[str, dict] = {}
        for (t, c), e in sorted(self.entries.items(), key=lambda kv: (_task_order(kv[0][0]), kv[0][1])):
            tasks.setdefault(t, {})[c] = e
        return {"format": PROFILE_FORMAT, "meta": self.meta, "tasks": tasks}

    def per_episode(self, task_id: str, condition: str) -> tuple[dict[str, float], bool]:
        """The mean use of one episode of (task, condition) and whether the profile has it exactly.
        A condition it lacks takes the task's ``full``; a task it lacks, the mean over its entries."""
        e = self.entries.get((task_id, condition)) or self.entries.get((task_id, "full"))
        if e is not None:
            return {q: e[q]["mean"] for q in QUANTITIES}, (task_id, condition) in self.entries
        if not self.entries:
            return {q: 0.0 for q in QUANTITIES}, False
        return {q: sum(x[q]["mean"] for x in self.entries.values()) / len(self.entries) for q in QUANTITIES}, False


def _task_order(task_id: str) -> tuple:
    head, _, num = task_id.partition("-")
    return (head, int(num) if num.isdigit() else 0, task_id)


def load_profile(path: str | None = None) -> Profile:
    """The shipped profile (``jeval_ray/sweep/data/token_profile.json``) or the one at ``path``."""
    if path is None:
        text = resources.files("jeval_ray.sweep").joinpath(PROFILE_RESOURCE).read_text(encoding="utf-8")
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    return Profile.from_dict(json.loads(text))


# ---------------------------------------------------------------------------- the forecast
@dataclass
class Usage:
    """Forecast use of some episodes: requests, tokens and dollars."""

    episodes: int = 0
    requests: float = 0.0
    tokens_in: float = 0.0
    tokens_cached_in: float = 0.0
    tokens_out: float = 0.0
    usd: float = 0.0

    def add(self, other: "Usage") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def cell_cost(price: Any, use: dict[str, float], *, cache_writes: bool = False) -> float:
    """USD of one episode's forecast ``use`` at ``price`` (a ``models.config.Price``). ``cache_writes``:
    the uncached input is billed as cache writes (Anthropic with ``prompt_caching``)."""
    tin, cached, out = use["tokens_in"], use["tokens_cached_in"], use["tokens_out"]
    write = max(0.0, tin - cached) if cache_writes else 0.0
    return price.cost(tin, out, cached, write)


class Forecaster:
    """Per-episode forecasts of a sweep's endpoint models (``model_configs``: name -> ``ModelConfig``;
    built-in models are left out and forecast nothing)."""

    def __init__(self, profile: Profile, model_configs: dict[str, Any],
                 calibration: dict[str, "Calibration"] | None = None) -> None:
        self.profile = profile
        self.models = model_configs
        self.calibration = calibration or {}
        self._memo: dict[tuple[str, str, str], Usage] = {}
        #: (task, condition) pairs forecast without a profile entry of their own (see ``Profile.per_episode``)
        self.approximated: set[tuple[str, str]] = set()

    def episode(self, model: str, task_id: str, condition: str) -> Usage:
        """The forecast of one episode (zero for a built-in model)."""
        key = (model, task_id, condition)
        if key in self._memo:
            return self._memo[key]
        cfg = self.models.get(model)
        if cfg is None:
            u = Usage(episodes=1)
        else:
            cal = self.calibration.get(model)
            base, exact = self.profile.per_episode(task_id, condition)
            if not exact and not (cal and (task_id, condition) in cal.means):
                self.approximated.add((task_id, condition))
            use = cal.per_episode(task_id, condition, self.profile) if cal else base
            anthropic_writes = getattr(cfg, "provider", "") == "anthropic" and getattr(cfg, "prompt_caching", False)
            usd = cell_cost(cfg.price, use, cache_writes=anthropic_writes)
            cap = getattr(cfg, "episode_budget_usd", None)
            if cap is not None and usd > cap:  # the agent stops at its cap: forecast the capped share of the episode
                use = {q: v * cap / usd for q, v in use.items()}
                usd = cap
            u = Usage(1, use["requests"], use["tokens_in"], use["tokens_cached_in"], use["tokens_out"], usd)
        self._memo[key] = u
        return u

    def usd(self, model: str, task_id: str, condition: str) -> float:
        return self.episode(model, task_id, condition).usd

    def grid(self, cells: Iterable[Any]) -> dict[str, Usage]:
        """Per model (and ``"total"``) the forecast of ``cells`` (anything with model, task_id, condition)."""
        out: dict[str, Usage] = {}
        total = Usage()
        for c in cells:
            u = self.episode(c.model, c.task_id, c.condition)
            out.setdefault(c.model, Usage()).add(u)
            total.add(u)
        out["total"] = total
        return out


@dataclass
class Calibration:
    """What an earlier run of one model says about it: its own mean per (task, condition) and the
    ratio of its use to the profile's forecast over the cells it played (per quantity)."""

    model: str
    run: str
    means: dict[tuple[str, str], dict[str, float]]
    ratio: dict[str, float]
    episodes: int

    def per_episode(self, task_id: str, condition: str, profile: Profile) -> dict[str, float]:
        own = self.means.get((task_id, condition))
        if own is not None:
            return own
        base, _ = profile.per_episode(task_id, condition)
        return {q: base[q] * self.ratio.get(q, 1.0) for q in QUANTITIES}


def episode_measures(episodes: list[dict], steps: list[dict]) -> list[dict]:
    """Per completed episode with model tokens: task, condition and its ``QUANTITIES`` and largest
    request, from ``episodes`` and ``steps`` rows (a reply's tokens sit on its first step)."""
    per: dict[tuple[str, int], list[int]] = {}
    for s in steps:
        if s.get("tokens_in"):
            per.setdefault((s["episode_id"], s["attempt"]), []).append(int(s["tokens_in"]))
    out = []
    for e in episodes:
        if e.get("status") != "completed" or e.get("tokens_in") is None:
            continue
        reqs = per.get((e["episode_id"], e["attempt"]), [])
        out.append({"task_id": e["task_id"], "condition": e["condition"], "requests": len(reqs),
                    "tokens_in": e["tokens_in"] or 0, "tokens_cached_in": e.get("tokens_cached_in") or 0,
                    "tokens_out": e["tokens_out"] or 0, "largest_request": max(reqs, default=0)})
    return out


def calibrate(measures: list[dict], profile: Profile, *, model: str, run: str) -> Calibration:
    """A ``Calibration`` of ``model`` from its episodes' ``measures`` (``episode_measures``)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for m in measures:
        groups.setdefault((m["task_id"], m["condition"]), []).append(m)
    means = {k: {q: sum(m[q] for m in ms) / len(ms) for q in QUANTITIES} for k, ms in groups.items()}
    ratio = {}
    for q in QUANTITIES:
        actual = sum(m[q] for m in measures)
        forecast = sum(profile.per_episode(m["task_id"], m["condition"])[0][q] for m in measures)
        ratio[q] = actual / forecast if forecast > 0 else 1.0
    return Calibration(model, run, means, ratio, len(measures))


def calibrations_from_run(run_dir: str, models: Iterable[str], profile: Profile, filesystem=None) -> dict[str, Calibration]:
    """``--forecast-from``: a ``Calibration`` for each of ``models`` that the stored run at ``run_dir``
    played with model tokens (deduplicated rows). Models it did not play are left out."""
    from jeval_ray.store import read_dataset

    eps = read_dataset(run_dir, "episodes", filesystem=filesystem).to_pylist()
    wanted = set(models)
    eps = [e for e in eps if e["model"] in wanted]
    if not eps:
        return {}
    steps = read_dataset(run_dir, "steps", filesystem=filesystem).select(
        ["episode_id", "attempt", "model", "tokens_in"]).to_pylist()
    out = {}
    for m in sorted({e["model"] for e in eps}):
        measures = episode_measures([e for e in eps if e["model"] == m], [s for s in steps if s["model"] == m])
        if measures:
            out[m] = calibrate(measures, profile, model=m, run=run_dir)
    return out


def _fmt_tokens(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:.0f}"


def format_forecast(by_model: dict[str, Usage], profile: Profile, calibration: dict[str, Calibration],
                    builtin: Iterable[str] = (), approximated: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The lines ``--dry-run`` prints on stderr: per model and in total, requests, input, cached and
    output tokens and dollars, where each model's figures come from, and the caveat."""
    builtin = set(builtin)
    w = max([28, *(len(n) for n in by_model)])
    lines = [f"# forecast ({profile.meta.get('solver_short', 'reference solver')} profile of "
             f"{profile.meta.get('generated_at', '?')[:10]}, code {str(profile.meta.get('code_commit', '?'))[:10]}):",
             f"# {'model':{w}} {'episodes':>8} {'requests':>9} {'input':>9} {'cached':>9} {'output':>9} {'USD':>10}  basis"]
    for name, u in by_model.items():
        if name == "total":
            continue
        if name in builtin:
            lines.append(f"# {name:{w}} {u.episodes:>8} {'-':>9} {'-':>9} {'-':>9} {'-':>9} {0:>10.2f}  built-in agent, no model")
            continue
        cal = calibration.get(name)
        basis = (f"calibrated on {cal.episodes} episode(s) of {cal.run}" if cal else "profile")
        lines.append(f"# {name:{w}} {u.episodes:>8} {u.requests:>9.0f} {_fmt_tokens(u.tokens_in):>9} "
                     f"{_fmt_tokens(u.tokens_cached_in):>9} {_fmt_tokens(u.tokens_out):>9} {u.usd:>10.2f}  {basis}")
    t = by_model.get("total", Usage())
    lines.append(f"# {'total':{w}} {t.episodes:>8} {t.requests:>9.0f} {_fmt_tokens(t.tokens_in):>9} "
                 f"{_fmt_tokens(t.tokens_cached_in):>9} {_fmt_tokens(t.tokens_out):>9} {t.usd:>10.2f}")
    approx = sorted(approximated)
    if approx:
        lines.append(f"# not in the profile, forecast from the task's full condition (or the profile's mean): "
                     f"{', '.join(f'{t} {c}' for t, c in approx[:8])}{' ...' if len(approx) > 8 else ''}")
    lines.append("# caveat: " + CAVEAT.format(solver=profile.meta.get("solver", "see the profile's meta")))
    return lines


def endpoint_configs(cfg) -> dict[str, Any]:
    """name -> ``ModelConfig`` of a sweep config's endpoint models (built-in agents left out)."""
    from jeval_ray.models.config import ModelConfig

    return {m.name: ModelConfig.model_validate(m.endpoint_fields()) for m in cfg.models if m.provider != "builtin"}


def forecaster_for(cfg, forecast_from: str | None = None, profile: Profile | None = None) -> Forecaster:
    """The ``Forecaster`` of a sweep config: the shipped profile, calibrated on the run at
    ``forecast_from`` (``--forecast-from``) for each model that run played."""
    profile = profile or load_profile()
    models = endpoint_configs(cfg)
    cal = calibrations_from_run(forecast_from, models, profile) if forecast_from else {}
    return Forecaster(profile, models, cal)



def context_notes(fc: Forecaster, pairs: Iterable[tuple[str, str]]) -> list[str]:
    """A line per endpoint model whose ``context_window`` (less ``max_tokens``) the profile's largest
    request passes on some of ``pairs`` (task, condition): such episodes may end ``context_overflow``."""
    pairs = sorted(set(pairs), key=lambda p: (_task_order(p[0]), p[1]))
    lines = []
    for name, cfg in fc.models.items():
        room = getattr(cfg, "context_window", None)
        if room is None:
            continue
        room -= getattr(cfg, "max_tokens", 0)
        over = [(t, c, fc.profile.entries[(t, c)]["largest_request"]["max"]) for t, c in pairs
                if (t, c) in fc.profile.entries and fc.profile.entries[(t, c)]["largest_request"]["max"] > room]
        if over:
            shown = ", ".join(f"{t} {c} ({_fmt_tokens(x)})" for t, c, x in over[:6]) + (" ..." if len(over) > 6 else "")
            lines.append(f"# note: the reference solver's largest request passes {name}'s context_window - max_tokens "
                         f"({_fmt_tokens(room)}) on {shown}: such episodes may end context_overflow")
    return lines

__all__ = ["CAVEAT", "Calibration", "Forecaster", "PROFILE_FORMAT", "Profile", "QUANTITIES", "Usage", "calibrate",
           "calibrations_from_run", "cell_cost", "context_notes", "endpoint_configs", "episode_measures", "forecaster_for",
           "format_forecast", "load_profile", "profile_entry", "summarise"]
