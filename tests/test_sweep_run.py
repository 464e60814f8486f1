"""A small sweep end to end: the Parquet layout, the records, and reading them back with every reader."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import tiny_config

from jeval_ray.records.schemas import DATASETS
from jeval_ray.store import read_dataset, read_run
from jeval_ray.sweep import Grid, run_sweep, validate_config
from jeval_ray.tasks import get_task

TASKS = ["JE-1", "JE-13"]  # an L1 task (1 judge) and an L4 task (3 judges)
MODELS = [{"name": "careful", "provider": "builtin", "agent": "careful"},
          {"name": "org/naive-v1", "provider": "builtin", "agent": "naive"}]


@pytest.fixture(scope="module")
def sweep(ray_local, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep_run")
    cfg = validate_config(tiny_config(tmp, tasks=TASKS, models=MODELS, conditions=["full", "withheld"]))
    drivers = []
    result = run_sweep(cfg, on_tick=lambda d: drivers.append(d) if not drivers else None)
    return {"cfg": cfg, "result": result, "run_dir": Path(result.run_dir), "grid": Grid(cfg), "driver": drivers[0]}


def _cells(sweep):
    return list(sweep["grid"].cells())


def test_every_grid_cell_completes_once(sweep):
    r = sweep["result"]
    assert r.total == len(sweep["grid"]) == 2 * 2 * 2 * 2
    assert (r.done, r.failed, r.retried, r.skipped) == (r.total, 0, 0, 0)
    eps = read_dataset(str(sweep["run_dir"]), "episodes")
    assert sorted(eps["episode_id"].to_pylist()) == sorted(c.episode_id for c in _cells(sweep))
    assert set(eps["status"].to_pylist()) == {"completed"} and set(eps["attempt"].to_pylist()) == {1}


def test_the_layout_is_hive_partitioned_by_task_and_model_with_unique_part_files(sweep):
    run = sweep["run_dir"]
    assert (run / "manifest.json").is_file()
    for name in DATASETS:
        files = sorted((run / name).rglob("*"))
        parts = [f for f in files if f.is_file()]
        assert parts, name
        for f in parts:
            rel = f.relative_to(run / name).parts
            assert rel[0].startswith("task_id=JE-") and rel[1].startswith("model=") and len(rel) == 3
            assert f.name.startswith("part-") and f.suffix == ".parquet" and len(f.stem) == len("part-") + 32
        dirs = {f.parent.relative_to(run / name).as_posix() for f in parts}
        assert "task_id=JE-1/model=org%2Fnaive-v1" in dirs
    assert not [p for p in run.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")]


def test_files_do_not_store_the_partition_columns(sweep):
    f = next((sweep["run_dir"] / "steps").rglob("*.parquet"))
    names = pq.read_schema(f).names
    assert "task_id" not in names and "model" not in names and "episode_id" in names


def test_writes_are_batched_not_one_file_per_step(sweep):
    r = sweep["result"]
    assert r.files["steps"] <= r.files["episodes"] and r.rows["steps"] > 10 * r.files["steps"]


def test_the_manifest_records_config_version_environment_and_seed_warning(sweep):
    m = json.loads((sweep["run_dir"] / "manifest.json").read_text())
    assert m["status"] == "completed" and m["run_id"] == sweep["result"].run_id
    assert m["package_version"] and m["environment"]["ray"] and m["environment"]["python"]
    assert m["sweep_config"]["models"][1]["name"] == "org/naive-v1"
    assert "variance is not measurable" in m["seed_warning"]
    assert m["grid"]["episodes"] == 16 and m["dedup_rule"]


def test_episode_rows_carry_the_run_config_contract_and_the_judged_score(sweep):
    eps = read_dataset(str(sweep["run_dir"]), "episodes").to_pylist()
    by_id = {c.episode_id: c for c in _cells(sweep)}
    for row in eps:
        cell = by_id[row["episode_id"]]
        assert json.loads(row["run_config"]) == json.loads(cell.contract_json)
        assert row["judges_ok"] == get_task(row["task_id"]).judges_per_episode
        w = json.loads(row["run_config"])["scoring"]["weights"]
        o = row["outcome"]  # process and rationale count in proportion to the outcome (docs/scoring.md)
        expect = w["outcome"] * o + o * (w["process"] * row["process"] + w["rationale"] * row["rationale"])
        assert row["score"] == pytest.approx(expect)
        assert row["world_hash"] and row["n_steps"] > 0 and row["worker"]


def test_judging_is_pipelined_with_playing(ray_local, tmp_path):
    # a simulated slow model (no CPU): playing outlasts the judge pool's start-up, as with real models
    sim = {"name": "sim", "agent": "sleep", "agent_options": {"latency_ms": 200, "steps": 3}}
    cfg = validate_config(tiny_config(tmp_path, models=[sim], seeds=40, allow_test_agents=True,
                                      execution={"episodes_per_worker": 2}))
    drivers = []
    run_sweep(cfg, on_tick=lambda d: drivers.append(d) if not drivers else None)
    t = drivers[0].timeline
    assert t["first_judgment"] < t["last_episode_result"]


def test_row_counts_agree_across_every_reader(sweep):
    run = str(sweep["run_dir"])
    ours = read_run(run)
    n_eps = len(sweep["grid"])
    assert ours["episodes"].num_rows == n_eps
    judges = sum(get_task(t).judges_per_episode for t in ours["episodes"]["task_id"].to_pylist())
    assert ours["judgments"].num_rows == judges > n_eps  # 1 judge per L1 episode, 3 per L4 episode
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow.dataset as ds
    import ray.data

    from jeval_ray.store import partitioning

    for name in DATASETS:
        expect = ours[name].num_rows
        models = sorted(set(ours[name]["model"].to_pylist()))
        assert models == ["careful", "org/naive-v1"], name
        glob = f"{run}/{name}/**/*.parquet"
        duck = duckdb.sql(f"SELECT model, count(*) FROM read_parquet('{glob}', hive_partitioning=true) GROUP BY model").fetchall()
        assert sum(n for _, n in duck) == expect and sorted(m for m, _ in duck) == models, name
        plf = pl.scan_parquet(glob, hive_partitioning=True).select(pl.col("model")).collect()
        assert plf.height == expect and sorted(plf["model"].unique().to_list()) == models, name
        pdf = pd.read_parquet(f"{run}/{name}")
        assert len(pdf) == expect and sorted(pdf["model"].astype(str).unique()) == models, name
        pat = ds.dataset(f"{run}/{name}", schema=DATASETS[name], partitioning=partitioning()).to_table()
        assert pat.num_rows == expect and sorted(set(pat["model"].to_pylist())) == models, name
        rd = ray.data.read_parquet(f"{run}/{name}", partitioning=ray.data.datasource.partitioning.Partitioning("hive"))
        rows = rd.select_columns(["model"]).take_all()
        assert len(rows) == expect and sorted({r["model"] for r in rows}) == models, name


def test_steps_and_dispositions_belong_to_their_episodes(sweep):
    t = read_run(str(sweep["run_dir"]))
    eps = {r["episode_id"]: r for r in t["episodes"].to_pylist()}
    per_ep: dict[str, int] = {}
    for r in t["steps"].select(["episode_id"]).to_pylist():
        per_ep[r["episode_id"]] = per_ep.get(r["episode_id"], 0) + 1
    assert per_ep == {k: v["n_steps"] for k, v in eps.items()}
    assert set(t["dispositions"]["episode_id"].to_pylist()) <= set(eps)


def test_readers_keep_columns_missing_from_older_files(sweep, tmp_path):
    """A file written without a column (an older version) still reads with the unified schema."""
    import shutil

    run = tmp_path / "old"
    shutil.copytree(sweep["run_dir"], run)
    f = next((run / "episodes").rglob("*.parquet"))
    old = pq.read_table(f).drop_columns(["judge_spread"])
    pq.write_table(old, f)
    eps = read_dataset(str(run), "episodes")
    assert "judge_spread" in eps.column_names and eps.num_rows == len(sweep["grid"])


def test_the_output_root_can_be_a_filesystem_uri(ray_local, tmp_path):
    cfg = validate_config(tiny_config(tmp_path))
    r = run_sweep(cfg, out=f"file://{tmp_path}/uri-root")
    assert r.run_dir.startswith("file://") and r.done == 2
    assert read_dataset(r.run_dir, "episodes").num_rows == 2
    assert (tmp_path / "uri-root" / r.run_id / "manifest.json").is_file()


def test_episode_workers_keep_worlds_within_the_configs_world_cache_bounds(ray_local, tmp_path):
    """``execution.world_cache`` and ``world_cache_entries`` reach every episode worker the driver starts
    (a million-entry world holds about 0.45 GB: the entries bound keeps such sweeps within memory)."""
    cfg = validate_config(tiny_config(tmp_path, tasks=["JE-1"], models=MODELS[:1], conditions=["full"],
                                      execution={"world_cache": 3, "world_cache_entries": 5_000}))
    bounds = {}

    def tick(d):
        for s in d.slots:
            if s.kind == "episode" and s.ready and s.label not in bounds:
                bounds[s.label] = ray_local.get(s.handle.ready.remote())["world_cache"]

    result = run_sweep(cfg, on_tick=tick)
    assert result.done == result.total == len(Grid(cfg)) and result.failed == 0
    assert bounds and all(b == {"worlds": 3, "entries": 5_000} for b in bounds.values()), bounds


def test_workers_sharing_worlds_write_exactly_what_workers_generating_every_world_write(sweep, tmp_path):
    """The fixture's sweep keeps worlds (``execution.world_cache``, default 16): each (task, seed) world
    serves 2 models x 2 conditions. Played again generating every episode's world, every record is the
    same but for the run id, clocks and worker labels."""
    assert sweep["cfg"].execution.world_cache == 16
    # 16 episodes on 4 distinct worlds: batches of 4 cells (2 conditions x 2 models of one world) per worker
    assert sweep["result"].worlds == {"generated": 4, "reused": 12, "ahead": 0}
    manifest = json.loads((sweep["run_dir"] / "manifest.json").read_text())
    assert manifest["invocations"][-1]["worlds"] == {"generated": 4, "reused": 12, "ahead": 0}
    cfg = validate_config(tiny_config(tmp_path, tasks=TASKS, models=MODELS, conditions=["full", "withheld"],
                                      execution={"world_cache": 0}))
    fresh = run_sweep(cfg)
    assert fresh.worlds == {"generated": 16, "reused": 0, "ahead": 0}
    volatile = {"run_id", "started_at", "finished_at", "wall_s", "worker", "timestamp", "latency_ms"}

    def rows(run_dir, name):
        t = read_dataset(str(run_dir), name)
        out = [{k: v for k, v in r.items() if k not in volatile} for r in t.to_pylist()]
        return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))

    for name in ("episodes", "steps", "dispositions", "judgments"):
        cached, regenerated = rows(sweep["run_dir"], name), rows(fresh.run_dir, name)
        assert len(cached) == len(regenerated) > 0, name
        assert cached == regenerated, name


SLOW_SIM = {"name": "sim", "provider": "builtin", "agent": "sleep", "agent_options": {"latency_ms": 1000, "steps": 1}}
TINY_WORLD = {"n_entries": 40, "n_defects": 1, "n_decoys": 1, "noise_documents": 0}


def test_episodes_per_worker_auto_lets_max_in_flight_episodes_play_at_once(ray_local, tmp_path):
    """2 workers and max_in_flight 140: auto gives each worker room for 70, so all 140 are dispatched at
    once (a fixed 64 per worker would cap the sweep at 128 without saying so)."""
    cfg = validate_config(tiny_config(tmp_path, models=[SLOW_SIM], seeds=140, knobs=TINY_WORLD, allow_test_agents=True,
                                      execution={"episode_workers": 2, "episodes_per_worker": "auto", "max_in_flight": 140}))
    peak = []
    r = run_sweep(cfg, on_tick=lambda d: peak.append(sum(s.in_flight for s in d.slots if s.kind == "episode")))
    assert r.done == 140 and r.warnings == []
    assert max(peak) == 140


def _most_at_once(eps: list[dict]) -> int:
    """The most episodes playing at one moment, from the rows' ``started_at`` / ``finished_at``."""
    events = sorted([(e["started_at"], 1) for e in eps] + [(e["finished_at"], -1) for e in eps], key=lambda x: (x[0], x[1]))
    now = most = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def test_fewer_episodes_per_worker_than_max_in_flight_needs_is_a_warning(ray_local, tmp_path):
    cfg = validate_config(tiny_config(tmp_path, models=[SLOW_SIM], seeds=8, knobs=TINY_WORLD, allow_test_agents=True,
                                      execution={"episode_workers": 2, "episodes_per_worker": 3, "max_in_flight": 16}))
    r = run_sweep(cfg)
    assert r.done == 8 and _most_at_once(read_dataset(r.run_dir, "episodes").to_pylist()) == 6
    assert len(r.warnings) == 1 and "at most 6 episodes play at once" in r.warnings[0] and "'auto'" in r.warnings[0]
    manifest = json.loads((Path(r.run_dir) / "manifest.json").read_text())
    assert r.warnings[0] in manifest["warnings"]
    # a grid no larger than what the workers hold at once is not capped: no warning
    small = validate_config(tiny_config(tmp_path / "small", models=[SLOW_SIM], seeds=4, knobs=TINY_WORLD,
                                        allow_test_agents=True,
                                        execution={"episode_workers": 2, "episodes_per_worker": 2, "max_in_flight": 16}))
    assert run_sweep(small).warnings == []


#: episodes long enough (2 x 0.6 s) that the driver fills every queue before the first ends, even
#: when the suite runs on both cores at once
QUEUE_SIM = {"name": "sim", "provider": "builtin", "agent": "sleep", "agent_options": {"latency_ms": 600, "steps": 2}}


@pytest.mark.parametrize("queue", ["auto", 0])
def test_a_worker_plays_its_share_at_once_and_starts_queued_episodes_on_worlds_built_while_they_waited(
        ray_local, tmp_path, queue):
    """2 workers x 3 episodes at once; ``queue_per_worker`` auto gives each a queue of 3 more (the sleep
    agent waits on latency): 12 dispatched at once, never more than 3 playing per worker, and queued
    episodes find their world built. With 0, the driver holds what does not play."""
    cfg = validate_config(tiny_config(tmp_path, models=[QUEUE_SIM], seeds=12, knobs=TINY_WORLD, allow_test_agents=True,
                                      execution={"episode_workers": 2, "episodes_per_worker": 3, "max_in_flight": 6,
                                                 "queue_per_worker": queue}))
    dispatched = []
    r = run_sweep(cfg, on_tick=lambda d: dispatched.append(sum(s.in_flight for s in d.slots if s.kind == "episode")))
    eps = read_dataset(r.run_dir, "episodes").to_pylist()
    assert (r.done, r.failed, len(eps)) == (12, 0, 12)
    assert _most_at_once(eps) == 6
    assert all(_most_at_once([e for e in eps if e["worker"] == w]) <= 3 for w in {e["worker"] for e in eps})
    assert r.worlds["generated"] == 12 and r.warnings == []
    if queue == "auto":
        assert max(dispatched) == 12 and r.worlds["ahead"] >= 1
    else:
        assert max(dispatched) == 6 and r.worlds["ahead"] == 0


def test_every_parquet_column_carries_its_description_and_builtin_agents_have_null_tokens_and_latency(sweep):
    """docs/data.md's descriptions travel in the files (Arrow field metadata); null, not 0, where nothing was measured."""
    import duckdb

    from jeval_ray.records.schemas import description

    run = sweep["run_dir"]
    for name in DATASETS:
        files = sorted(run.glob(f"{name}/**/*.parquet"))
        assert files, name
        schema = pq.read_schema(files[0])
        for f in schema:
            assert f.metadata and f.metadata[b"description"].decode() == description(name, f.name), (name, f.name)
    glob = f"{run}/steps/**/*.parquet"
    steps = duckdb.sql(f"SELECT count(*), count(tokens_in), count(tokens_out), count(latency_ms) "
                       f"FROM read_parquet('{glob}', hive_partitioning=true)").fetchall()[0]
    assert steps[0] > 0 and steps[1:] == (0, 0, 0)
    eps = duckdb.sql(f"SELECT count(*), count(tokens_in), count(tokens_out), sum(cost_usd) "
                     f"FROM read_parquet('{run}/episodes/**/*.parquet', hive_partitioning=true)").fetchall()[0]
    assert eps == (len(_cells(sweep)), 0, 0, 0.0)
