"""The report's tables from fixed episode rows: boards per condition, ranks, pass^k, judges, outputs."""

import csv
import io
import json

import pyarrow as pa
import pytest
from rich.console import Console

from jeval_ray.records import EPISODES, JUDGMENTS
from jeval_ray.report import build_report, render_terminal, to_csv, to_markdown


def _ep(model, condition, task, seed, score, *, status="completed", tier="L1", **over):
    row = {f.name: None for f in EPISODES}
    row.update(run_id="r", episode_id=f"{model}|{condition}|{task}|{seed}", attempt=1, task_id=task, model=model,
               seed=seed, condition=condition, agent=model, tier=tier, status=status, termination="submitted",
               score=score, outcome=score, process=0.5, rationale=0.5, fabrications=1, n_steps=10, tokens_in=100,
               tokens_out=10, cost_usd=0.01, judge_cost_usd=0.002, wall_s=2.0, judges_ok=1, evidence_coverage=1.0,
               evidence_precision=0.5, redundant_calls=2, steps_to_first_flag=None, baseline_before_claim=None,
               premature_disposition=1)
    row.update(over)
    return row


def _grid(model, condition, scores: dict[str, list[float]], **over):
    return [_ep(model, condition, task, seed, s, **over) for task, ss in scores.items() for seed, s in enumerate(ss)]


def _table(rows):
    return pa.Table.from_pylist(rows, schema=EPISODES)


def _judgments(rows):
    full = []
    for r in rows:
        j = {f.name: None for f in JUDGMENTS}
        j.update(run_id="r", attempt=1, task_id="JE-1", model="m", seed=0, condition="full", judge_idx=0,
                 rubric="global_rubric_v1", tokens_in=0, tokens_out=0, cost_usd=0.0)
        j.update(r)
        full.append(j)
    return pa.Table.from_pylist(full, schema=JUDGMENTS)


STRONG = {"JE-1": [0.9, 0.95, 0.9, 0.85, 0.9], "JE-2": [0.8, 0.85, 0.9, 0.8, 0.85]}
WEAK = {"JE-1": [0.3, 0.35, 0.3, 0.25, 0.3], "JE-2": [0.2, 0.25, 0.3, 0.2, 0.25]}


def _rows(report, name, **match):
    return [r for r in report.table(name).rows if all(r[k] == v for k, v in match.items())]


def test_conditions_are_separate_boards_and_never_mixed():
    full = _grid("a", "full", STRONG) + _grid("b", "full", WEAK)
    withheld = _grid("a", "withheld", WEAK) + _grid("b", "withheld", STRONG)  # reversed on purpose
    both = build_report(_table(full + withheld))
    alone = build_report(_table(full))
    assert _rows(both, "leaderboard", condition="full") == alone.table("leaderboard").rows
    assert _rows(both, "pairs", condition="full") == alone.table("pairs").rows
    assert [(r["rank"], r["model"]) for r in _rows(both, "leaderboard", condition="withheld")] == [(1, "b"), (2, "a")]
    assert both.meta["conditions"] == ["full", "withheld"]


def test_deltas_against_full_are_paired_on_the_same_cells():
    full = _grid("a", "full", STRONG)
    withheld = _grid("a", "withheld", {t: [s - 0.1 for s in ss] for t, ss in STRONG.items()})
    [d] = build_report(_table(full + withheld)).table("conditions").rows
    assert d["condition"] == "withheld" and d["cells"] == 10
    assert d["delta"] == pytest.approx(-0.1) and d["delta_se"] == pytest.approx(0) and d["p"] == 0.0


def test_models_not_separable_share_a_rank():
    # 4 tasks; b and c differ by noise only (c = b + 0.02, -0.03, +0.01, -0.01 by task); a is far ahead of both
    strong = {**STRONG, "JE-3": STRONG["JE-1"], "JE-4": STRONG["JE-2"]}
    weak = {**WEAK, "JE-3": WEAK["JE-1"], "JE-4": WEAK["JE-2"]}
    shift = {"JE-1": 0.02, "JE-2": -0.03, "JE-3": 0.01, "JE-4": -0.01}
    noise = {t: [s + shift[t] for s in ss] for t, ss in weak.items()}
    rows = _grid("a", "full", strong) + _grid("b", "full", weak) + _grid("c", "full", noise)
    report = build_report(_table(rows))
    assert {r["model"]: r["rank"] for r in report.table("leaderboard").rows} == {"a": 1, "b": 2, "c": 2}
    bc = _rows(report, "pairs", model_a="b", model_b="c")[0]
    assert bc["significant"] is False and bc["p_holm"] >= bc["p"]


def test_fewer_than_five_seeds_shows_the_state_and_no_interval():
    two = {"JE-1": [0.9, 0.5], "JE-2": [0.7, 0.8]}
    rows = _grid("a", "full", two) + _grid("b", "full", {t: [s / 2 for s in ss] for t, ss in two.items()})
    report = build_report(_table(rows))
    for r in report.table("leaderboard").rows:
        assert r["score_interval"] == "variance not measurable (2 seeds)" and r["score_lo"] is None
        assert r["rank"] == 1  # nothing separates them
    [p] = report.table("pairs").rows
    assert p["p"] is None and p["significant"] is None and p["mde"] is None and p["diff_interval"].startswith("variance")
    assert all("variance not measurable" in r["pass1_interval"] for r in report.table("pass_k").rows)
    buf = io.StringIO()
    render_terminal(report, Console(file=buf, width=200))
    out = buf.getvalue()
    assert "variance not measurable (2 seeds)" in out and "warning" not in out.lower()


def test_failed_and_unscored_episodes_are_counted_not_averaged():
    rows = _grid("a", "full", STRONG)
    rows += [_ep("a", "full", "JE-1", 5, None, status="failed"), _ep("a", "full", "JE-1", 6, None)]
    [b] = build_report(_table(rows)).table("leaderboard").rows
    assert (b["episodes"], b["completed"], b["failed"], b["unscored"]) == (12, 11, 1, 1)
    assert b["score"] == pytest.approx(sum(STRONG["JE-1"] + STRONG["JE-2"]) / 10)
    assert b["fabrications"] == 10 and b["steps"] == pytest.approx(10)


def test_the_leaderboard_says_which_columns_are_totals_and_which_are_means():
    report = build_report(_table(_grid("a", "full", STRONG)))
    heads = {c.key: c.header for c in report.table("leaderboard").columns}
    assert heads["fabrications"] == "fabrications (total)" and heads["steps"] == "steps (mean/ep)"
    assert heads["score"] == "score (mean)"
    assert any("fabrications is the total" in n for n in report.table("leaderboard").notes)
    costs = {c.key: c.header for c in report.table("costs").columns}
    assert costs["agent_cost_usd"] == "agent $ (mean/ep)" and costs["total_cost_usd"] == "$ (total)"


def test_pass_k_by_hand():
    # JE-1: 3 of 5 seeds reach 0.8 -> pass^2 = C(3,2)/C(5,2) = 0.3; JE-2: all 5 -> 1; mean 0.65
    # pass^5: JE-1 0, JE-2 1 -> 0.5
    rows = _grid("a", "full", {"JE-1": [0.9, 0.9, 0.5, 0.9, 0.1], "JE-2": [0.8, 0.85, 0.9, 0.8, 0.85]})
    report = build_report(_table(rows), threshold=0.8, seed=11, resamples=500)
    [r] = report.table("pass_k").rows
    assert r["pass1"] == pytest.approx((0.6 + 1) / 2) and r["pass2"] == pytest.approx(0.65)
    assert r["pass5"] == pytest.approx(0.5) and "pass4" not in r
    assert r["pass2_lo"] <= 0.65 <= r["pass2_hi"]  # two tasks: resamples are {0.3, 0.3}, {0.3, 1}, {1, 1}
    assert {r["pass2_lo"], r["pass2_hi"]} <= {0.3, 0.65, 1.0}
    assert report.meta["bootstrap_seed"] == 11 and "seed 11" in report.table("pass_k").notes[0]
    assert build_report(_table(rows), seed=11, resamples=500).as_dict() == report.as_dict()


def test_process_metrics_and_tiers():
    rows = _grid("a", "full", {"JE-1": [0.9] * 5}) + _grid("a", "full", {"JE-13": [0.4] * 5}, tier="L4")
    report = build_report(_table(rows))
    [t] = report.table("tiers").rows
    assert t["L1"] == pytest.approx(0.9) and t["L4"] == pytest.approx(0.4) and t["L2"] is None
    [p] = report.table("process").rows
    assert p["redundant_calls"] == 2 and p["evidence_precision"] == 0.5 and p["steps_to_first_flag"] is None
    assert [r["task_id"] for r in report.table("tasks").rows] == ["JE-1", "JE-13"]


def test_no_llm_judges_is_said_and_llm_judges_are_counted_with_agreement():
    eps = _grid("m", "full", {"JE-1": [0.5] * 5})
    report = build_report(_table(eps), _judgments([{"episode_id": "e0", "judge": "reference", "status": "ok",
                                                     "rationale_score": 0.5}]))
    assert any("no LLM judges in this run" in n for n in report.table("judges").notes)
    assert any("no LLM judges in this run" in n for n in build_report(_table(eps)).table("judges").notes)

    js = [{"episode_id": "m|full|JE-1|0", "judge": "llm-a", "judge_idx": 0, "status": "ok", "rationale_score": 0.6,
           "tokens_in": 1000, "tokens_out": 100, "cost_usd": 0.01},
          {"episode_id": "m|full|JE-1|0", "judge": "llm-b", "judge_idx": 1, "status": "ok", "rationale_score": 0.8,
           "tokens_in": 500, "tokens_out": 50, "cost_usd": 0.005},
          {"episode_id": "m|full|JE-1|1", "judge": "llm-a", "judge_idx": 0, "status": "failed", "error": "timeout"},
          {"episode_id": "m|full|JE-1|1", "judge": "llm-b", "judge_idx": 1, "status": "unscored"}]
    report = build_report(_table(eps), _judgments(js))
    table = report.table("judges")
    a = next(r for r in table.rows if r["judge"] == "llm-a")
    b = next(r for r in table.rows if r["judge"] == "llm-b")
    assert (a["judgments"], a["ok"], a["failed"], a["unscored"], a["tokens"]) == (2, 1, 1, 0, 1100)
    assert (b["ok"], b["unscored"]) == (1, 1)
    assert not any("no LLM judges" in n for n in table.notes)
    assert any("1 episodes with 2+ scoring judges" in n and "mean 0.200" in n for n in table.notes)
    [c] = report.table("costs").rows  # judge tokens per episode from the judgments: (1650 + 0 + 0 + 0 + 0) / 5 ... of
    assert c["judge_tokens_in"] == pytest.approx(1500 / 2)  # the two episodes that have judgments


def test_judge_token_columns_on_episodes_are_used_when_present():
    eps = _table(_grid("m", "full", {"JE-1": [0.5] * 5}))
    eps = eps.append_column("judge_tokens_in", pa.array([200] * 5, pa.int64()))
    eps = eps.append_column("judge_tokens_out", pa.array([20] * 5, pa.int64()))
    [c] = build_report(eps).table("costs").rows
    assert (c["judge_tokens_in"], c["judge_tokens_out"]) == (200, 20)
    assert c["judge_cost_usd"] == pytest.approx(0.002) and c["total_cost_usd"] == pytest.approx(5 * 0.012)


def test_markdown_csv_and_json_carry_every_table():
    report = build_report(_table(_grid("a", "full", STRONG) + _grid("org/b", "full", WEAK)))
    md = to_markdown(report)
    for t in report.tables:
        assert f"## {t.title}" in md
    assert "| org/b |" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(report.table("leaderboard")))))
    assert rows[0]["model"] == "a" and float(rows[0]["score_lo"]) < float(rows[0]["score"]) < float(rows[0]["score_hi"])
    data = json.loads(json.dumps(report.as_dict()))
    assert set(data["tables"]) == {t.name for t in report.tables} and data["meta"]["bootstrap_seed"] == 0


def test_an_episode_page_replays_steps_dispositions_and_judge_comments():
    from jeval_ray.report.html import render_episode

    ep = _ep("org/m", "full", "JE-1", 3, None, status="failed", error="model_error: HTTP 500")
    ep["termination"] = "model_error: HTTP 500"
    steps = [{"step_idx": 0, "tool": "get_entry", "args": '{"entry_id": "1000000007"}', "is_error": False,
              "observation": '{"entry_id": "1000000007", "memo": "' + "a" * 5000 + '"}', "reasoning_trace": "look <first>"},
             {"step_idx": 1, "tool": "flag_entry", "args": "not json", "is_error": True, "observation": "bad arguments"}]
    disps = [{"step_idx": 1, "entry_id": "1000000007", "decision": "flag", "criteria": "UNBALANCED",
              "evidence": ["1000000007"], "rationale": "debits exceed credits", "amount": 12.5, "fabricated": False,
              "is_final": True, "is_exception": True}]
    judgments = [{"judge": "llm-a", "judge_idx": 0, "rubric": "global_rubric_v1", "status": "ok", "rationale_score": 0.75,
                  "overall_comment": "clear", "error": None,
                  "item_scores": '[{"entry_id": "1000000007", "scores": {"clarity": 3}, "comment": "cites the entry"}]'}]
    page = render_episode(ep, steps, disps, judgments)
    assert "model_error: HTTP 500" in page and "step 0: get_entry" in page and "step 1: flag_entry" in page
    assert "look &lt;first&gt;" in page and "(error observation)" in page and "show all" in page
    assert "the entry is an exception" in page and "clarity 3 - cites the entry" in page and "clear" in page
    assert "<script" not in page


def test_the_manifest_juries_agreement_and_calibration_are_reported():
    eps = _table(_grid("m", "full", {"JE-1": [0.5] * 5}))
    judging = {"juries": {"j1": {
        "rubric": "global_rubric_v1", "ok": 10, "unscored": 2, "failed": 0, "unscored_reasons": {"invalid_answer": 2},
        "agreement": {"episodes": 4, "items": {"clarity": {"alpha": 0.743, "ci_low": 0.5, "ci_high": 0.9},
                                               "scepticism": {"alpha": None}}},
        "reference_confusion": {"gpt-x": {"criterion_identified": {"n": 20, "agreement": 0.85, "table": []}}}}}}
    notes = build_report(eps, manifest={"judging": judging}).table("judges").notes
    assert any("jury j1" in n and "2 unscored (invalid_answer: 2)" in n for n in notes)
    assert any("Krippendorff's alpha" in n and "clarity 0.74 [0.50, 0.90]" in n and "scepticism n/a" in n for n in notes)
    assert any("gpt-x agrees with the reference judge on criterion_identified 0.85 of 20" in n for n in notes)
