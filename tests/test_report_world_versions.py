"""The report and world versions, on real Parquet runs: episodes of two versions of a task are refused (exit 2)
unless --allow-mixed, and every board (terminal, Markdown, CSV, JSON, HTML) names the versions it covers."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jeval_ray.records import EPISODES
from jeval_ray.report.__main__ import main

SCORES = {"JE-1": [0.9, 0.8, 0.85, 0.9, 0.95], "JE-2": [0.6, 0.7, 0.65, 0.7, 0.75]}


def _row(model: str, task: str, seed: int, score: float, version) -> dict:
    row = {f.name: None for f in EPISODES}
    row.update(run_id="r", episode_id=f"{model}|{task}|{seed}", attempt=1, task_id=task, model=model, seed=seed,
               condition="full", agent=model, tier="L1", status="completed", termination="submitted", score=score,
               outcome=score, process=0.5, rationale=0.5, fabrications=0, n_steps=10, world_version=version)
    return row


def _run(tmp: Path, name: str, version_of) -> Path:
    """A run directory with episodes Parquet in the sweep's hive layout; ``version_of(task, seed)``."""
    run = tmp / name
    for model, shift in (("a", 0.0), ("b", -0.2)):
        for task, scores in SCORES.items():
            rows = [_row(model, task, s, x + shift, version_of(task, s)) for s, x in enumerate(scores)]
            part = run / "episodes" / f"task_id={task}" / f"model={model}"
            part.mkdir(parents=True)
            table = pa.Table.from_pylist(rows, schema=EPISODES).drop_columns(["task_id", "model"])
            pq.write_table(table, part / "part-0.parquet")
    (run / "manifest.json").write_text(json.dumps({"kind": "jeval_ray.sweep.run", "run_id": name}))
    return run


def _main(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, " ".join(out.out.split()) if "--json" not in argv else out.out, " ".join(out.err.split())


def test_one_version_per_task_is_named_on_every_board(tmp_path, capsys):
    run = _run(tmp_path, "one", lambda t, s: {"JE-1": 1, "JE-2": 3}[t])
    code, out, err = _main(capsys, str(run))
    assert code == 0, err
    assert "world versions v1: JE-1; v3: JE-2" in out  # the header
    assert "world versions: v1: JE-1; v3: JE-2" in out  # the leaderboard's note
    code, out, err = _main(capsys, str(run), "--json")
    rep = json.loads(out)
    assert rep["meta"]["world_versions"] == {"JE-1": [1], "JE-2": [3]} and rep["meta"]["mixed_world_versions"] == []
    assert {r["world_versions"] for r in rep["tables"]["leaderboard"]["rows"]} == {"v1: JE-1; v3: JE-2"}
    assert {(r["task_id"], r["world_version"]) for r in rep["tables"]["tasks"]["rows"]} == {("JE-1", "v1"), ("JE-2", "v3")}
    out_dir = tmp_path / "rep"
    code, _, err = _main(capsys, str(run), "--out", str(out_dir))
    assert code == 0, err
    assert "world versions v1: JE-1; v3: JE-2" in (out_dir / "report.md").read_text()
    assert "world_versions" in (out_dir / "leaderboard.csv").read_text().splitlines()[0]  # the rows' key
    assert "world versions v1: JE-1; v3: JE-2" in (out_dir / "index.html").read_text()


@pytest.mark.parametrize("version_of, needle", [
    (lambda t, s: 2 if t == "JE-2" and s >= 3 else 1, "JE-2 (JE-2: v1 6 episode(s), v2 4 episode(s))"),
    (lambda t, s: None if t == "JE-2" and s == 0 else 1, "JE-2 (JE-2: v1 8 episode(s), unrecorded 2 episode(s))"),
])
def test_two_versions_of_a_task_are_refused_unless_allow_mixed(tmp_path, capsys, version_of, needle):
    run = _run(tmp_path, "mixed", version_of)
    for extra in ((), ("--json",), ("--plan", "--effect", "0.05")):
        code, out, err = _main(capsys, str(run), *extra)
        assert code == 2 and out == "", (extra, err)
        assert f"more than one world version of {needle}" in err and "--allow-mixed" in err and "JE-1" not in err
    code, out, err = _main(capsys, str(run), "--allow-mixed", "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["meta"]["mixed_world_versions"] == ["JE-2"]
    mixed = "+".join(needle.split("(JE-2: ")[1].split(" episode(s), ")[i].split(" ")[0] for i in (0, 1))
    assert rep["meta"]["world_versions_text"] == f"v1: JE-1; JE-2 {mixed} (mixed)"
    assert {r["world_version"] for r in rep["tables"]["tasks"]["rows"] if r["task_id"] == "JE-2"} == {mixed}
    assert rep["tables"]["leaderboard"]["notes"][0].endswith("pooled across versions by --allow-mixed")
    code, out, err = _main(capsys, str(run), "--allow-mixed")
    assert code == 0 and "(MIXED: pooled by --allow-mixed)" in out
