"""The leaderboard is computed from episode rows, per condition and model."""

import pyarrow as pa
import pytest

from jeval_ray.records import EPISODES
from jeval_ray.report import leaderboard_rows, render, variance_warning


def _rows(model, condition, scores_by_seed, tier="L1", failed=0):
    out = []
    for seed, score in scores_by_seed.items():
        out.append({"condition": condition, "model": model, "agent": model, "task_id": "JE-1", "tier": tier, "seed": seed,
                    "status": "completed", "score": score, "outcome": score, "process": 0.5, "rationale": 0.5,
                    "fabrications": 1, "n_steps": 10, "tokens_in": 100, "tokens_out": 10, "cost_usd": 0.01,
                    "judge_cost_usd": 0.0})
    for i in range(failed):
        out.append({**out[0], "status": "failed", "score": None, "seed": 99 + i})
    return out


def _table(rows):
    full = [{f.name: r.get(f.name) for f in EPISODES} for r in rows]
    for r in full:
        r.update(run_id="r", episode_id=f"{r['model']}{r['seed']}{r['condition']}", attempt=1)
    return pa.Table.from_pylist(full, schema=EPISODES)


def test_leaderboard_ranks_models_by_mean_score_within_each_condition():
    t = _table(_rows("a", "full", {s: 0.2 for s in range(5)}) + _rows("b", "full", {s: 0.8 for s in range(5)})
               + _rows("b", "withheld", {s: 0.4 for s in range(5)}))
    rows = leaderboard_rows(t)
    assert [(r["condition"], r["model"]) for r in rows] == [("full", "b"), ("full", "a"), ("withheld", "b")]
    assert rows[0]["score"] == pytest.approx(0.8) and rows[0]["L1"] == pytest.approx(0.8)
    assert rows[0]["episodes"] == 5 and rows[0]["fabrications"] == 5


def test_confidence_interval_needs_five_seeds_and_failures_are_counted():
    t = _table(_rows("a", "full", {0: 0.0, 1: 1.0, 2: 0.5, 3: 0.5, 4: 0.5}, failed=2) + _rows("b", "full", {0: 1.0, 1: 1.0}))
    rows = {r["model"]: r for r in leaderboard_rows(t)}
    assert rows["a"]["failed"] == 2 and rows["a"]["completed"] == 5
    assert rows["a"]["score_ci95"] == pytest.approx(1.96 * (0.125 ** 0.5) / 5 ** 0.5)
    assert rows["b"]["score_ci95"] is None
    assert "variance is not measurable" in variance_warning(list(rows.values()))


def test_render_prints_every_model(capsys):
    from rich.console import Console

    rows = leaderboard_rows(_table(_rows("org/model-x", "full", {s: 0.3 for s in range(5)})))
    render(rows, Console(width=200))
    assert "org/model-x" in capsys.readouterr().out
