"""The report on the output of a real sweep: the command line, its outputs, the HTML page in headless
Chromium, power planning, and the snippets of docs/analysis.md.

One real sweep (``python -m jeval_ray.sweep`` in a subprocess, local Ray) of 2 tasks x 3 built-in
agents x 5 seeds x {full, withheld} = 60 episodes is shared by the module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_cli, tiny_config

TASKS = ["JE-1", "JE-13"]  # an L1 task (1 judge) and an L4 task (3 judges: judge agreement)
MODELS = [{"name": "careful", "provider": "builtin", "agent": "careful"},
          {"name": "org/naive-v1", "provider": "builtin", "agent": "naive"},
          {"name": "random", "provider": "builtin", "agent": "random"}]


def report_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "jeval_ray.report", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(ROOT))


def _config(tmp: Path, name: str, **over) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(tiny_config(tmp, **over)))
    return path


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report_run")
    cfg = _config(tmp, "sweep.yaml", tasks=TASKS, models=MODELS, seeds=5, conditions=["full", "withheld"])
    out = run_cli("--config", str(cfg), "--plain", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir = Path(re.search(r"^output: (.+)$", out.stdout, re.M).group(1))
    return {"run": run_dir, "cfg": cfg, "stdout": out.stdout, "stderr": out.stderr, "tmp": tmp}


def test_the_sweep_ends_with_the_summary_tables(sweep):
    out = sweep["stdout"]
    for title in ("Leaderboard", "Paired differences", "delta against condition full"):
        assert title in out, title
    assert "org/naive-v1" in out and "bootstrap seed 0" in out and "variance not measurable (" not in out


def test_the_report_of_a_real_sweep(sweep):
    from jeval_ray.report import load_report

    report = load_report(str(sweep["run"]))
    board = report.table("leaderboard").rows
    assert [(r["condition"], r["model"]) for r in board][:1] == [("full", "careful")]
    # ranks follow the significant pairs (2 tasks: t with 1 df, so wide intervals and ties are expected)
    sig = {(p["condition"], p["model_a"] if p["diff"] > 0 else p["model_b"], p["model_b"] if p["diff"] > 0 else p["model_a"])
           for p in report.table("pairs").rows if p["significant"]}
    for r in board:
        assert r["rank"] == 1 + sum((r["condition"], o, r["model"]) in sig for o in ("careful", "org/naive-v1", "random"))
    assert all(r["episodes"] == 10 and r["seeds"] == 5 and r["tasks"] == 2 and r["failed"] == 0 for r in board)
    assert all(r["score_lo"] is not None for r in board)  # 5 seeds: intervals exist
    assert len(report.table("pairs").rows) == 6 and len(report.table("conditions").rows) == 3
    assert {r["cells"] for r in report.table("pairs").rows} == {10}
    judges = report.table("judges")
    assert any("no LLM judges in this run" in n for n in judges.notes)
    assert any("judge agreement: 30 episodes" in n for n in judges.notes)  # JE-13 x 3 models x 5 seeds x 2 conditions


def test_json_prints_every_table(sweep):
    out = report_cli(str(sweep["run"]), "--json", "--seed", "7")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["meta"]["bootstrap_seed"] == 7 and data["meta"]["episodes"] == 60
    assert {"leaderboard", "pairs", "conditions", "tiers", "tasks", "process", "pass_k", "costs", "judges"} <= set(
        data["tables"])
    from jeval_ray.report import load_report
    from jeval_ray.report.tables import dumps

    assert dumps(load_report(str(sweep["run"]), seed=7)) + "\n" == out.stdout  # reproducible


def _main(capsys, *args: str) -> tuple[int, str, str]:
    """The command in this process (faster than a subprocess; test_json_prints_every_table runs the real one)."""
    from jeval_ray.report.__main__ import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_paths_that_hold_no_run_exit_2_with_a_clear_message(sweep, capsys):
    run = sweep["run"]
    code, out, err = _main(capsys, "/nonexistent/run", "--json")
    assert code == 2 and out == "" and "does not exist" in err
    code, out, err = _main(capsys, str(run)[:-1] + ("x" if not str(run).endswith("x") else "y"))
    assert code == 2 and f"Did you mean {run}" in err
    code, out, err = _main(capsys, str(sweep["cfg"]), "--json")
    assert code == 2 and out == "" and "sweep config" in err
    code, out, err = _main(capsys, str(run.parent))
    assert code == 2 and "runs root" in err and str(run) in err
    empty = sweep["tmp"] / "empty"
    empty.mkdir()
    code, out, err = _main(capsys, str(empty), "--json")
    assert code == 2 and out == "" and "holds no run" in err


def test_power_planning_from_a_pilot(sweep, capsys):
    code, out, err = _main(capsys, str(sweep["run"]), "--plan", "--effect", "0.05")
    assert code == 0, err
    assert "Power plan" in out and "careful" in out
    assert re.search(r"\d+ seeds per task|not reachable with 2 task", out)
    code, out, _ = _main(capsys, str(sweep["run"]), "--plan", "--effect", "0.05", "--json")
    assert len(json.loads(out)["tables"]["plan"]["rows"]) == 6
    assert _main(capsys, str(sweep["run"]), "--plan")[0] == 2


def _chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.fixture(scope="module")
def html_out(sweep):
    from jeval_ray.report.__main__ import main

    out_dir = sweep["tmp"] / "report"
    assert main([str(sweep["run"]), "--out", str(out_dir)]) == 0
    return out_dir


def test_out_writes_markdown_csv_json_and_a_self_contained_page(sweep, html_out):
    names = {p.name for p in html_out.iterdir()}
    assert {"report.md", "report.json", "leaderboard.csv", "pairs.csv", "pass_k.csv", "index.html"} <= names
    index = (html_out / "index.html").read_text()
    assert index.count("<svg") == 8  # 4 plots x 2 conditions, inlined
    assert not re.search(r"<script|<link|src=|https?://(?!www\.w3\.org)", index)  # nothing fetched: works offline
    links = set(re.findall(r'href="(episodes/[0-9a-f]+\.html)"', index))
    assert len(links) == 60 and all((html_out / link).is_file() for link in links)
    page = (html_out / sorted(links)[0]).read_text()
    assert "step 0:" in page and "back to the report" in page and "observation" in page


def _run_chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    exe = _chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is missing: the README's test command installs it (apt-get install chromium)")
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp / 'chromium-profile'}", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_page_opens_in_headless_chromium_and_shows_its_plots(sweep, html_out):
    from PIL import Image

    url = (html_out / "index.html").as_uri()
    dom = _run_chromium(["--dump-dom", url], sweep["tmp"])
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") == 8 and "Score per model - full" in dom.stdout
    shot = sweep["tmp"] / "index.png"
    res = _run_chromium([f"--screenshot={shot}", "--window-size=1400,1700", url], sweep["tmp"])
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    img = Image.open(shot).convert("RGB")
    assert img.size == (1400, 1700)
    pixels = list(img.get_flattened_data()) if hasattr(img, "get_flattened_data") else list(img.getdata())
    assert len(set(pixels)) > 100  # not a blank page
    # the plots were painted: the heat map's viridis yellow (score 1.0, careful) and the score plot's blue points
    near = lambda rgb, ref: sum(abs(a - b) for a, b in zip(rgb, ref)) < 40  # noqa: E731
    assert sum(near(p, (253, 231, 37)) for p in pixels) > 500
    assert sum(near(p, (31, 95, 168)) for p in pixels) > 20
    episode = next((html_out / "episodes").glob("*.html"))
    dom = _run_chromium(["--dump-dom", episode.as_uri()], sweep["tmp"])
    assert "step 1:" in dom.stdout and "Judges" in dom.stdout


def test_docs_analysis_snippets_run_against_the_run(sweep):
    text = (ROOT / "docs" / "analysis.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    for i, block in enumerate(blocks):
        assert "runs/<run_id>" in block, f"snippet {i} does not read the run"
        ns: dict = {}
        exec(compile(block.replace("runs/<run_id>", str(sweep["run"])), f"docs/analysis.md snippet {i}", "exec"), ns)
        out = ns["out"]
        assert out is not None and (not hasattr(out, "__len__") or len(out) > 0), f"snippet {i} found nothing"
    sql = [b for b in blocks if "duckdb" in b]
    assert sql and any("pl.scan_parquet" in b for b in blocks) and any("read_dataset" in b for b in blocks)


def test_a_sweep_with_few_seeds_says_so_once(sweep):
    cfg = _config(sweep["tmp"], "two_seeds.yaml", seeds=2)  # JE-1 x careful x 2 seeds
    out = run_cli("--config", str(cfg), "--plain", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    both = out.stdout + out.stderr
    assert both.count("fewer than 5 seeds") == 1, both
    assert "variance not measurable (2 seeds)" in out.stdout  # the leaderboard's interval cell


def test_no_html_and_bad_options(sweep, capsys, tmp_path):
    code, _, err = _main(capsys, str(sweep["run"]), "--out", str(tmp_path / "r"), "--no-html")
    assert code == 0 and (tmp_path / "r" / "report.md").is_file() and not (tmp_path / "r" / "index.html").exists()
    assert _main(capsys, str(sweep["run"]), "--threshold", "2")[0] == 2
    code, _, err = _main(capsys, str(sweep["run"]), "--effect", "0.1")
    assert code == 2 and "--plan" in err
