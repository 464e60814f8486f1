"""RunWriter: when it flushes, what it writes, and its byte accounting (a local filesystem, no Ray)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from jeval_ray.records import STEPS, table_from_ipc, table_to_ipc
from jeval_ray.store.writer import RunWriter

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def steps(episode_id: str, task_id: str, n: int, model: str = "m") -> pa.Table:
    rows = [{"run_id": "r", "episode_id": episode_id, "attempt": 1, "task_id": task_id, "model": model, "seed": 0,
             "condition": "full", "step_idx": i, "tool": "query_ledger", "args": "{}", "observation_hash": "h",
             "tokens_in": 0, "tokens_out": 0, "latency_ms": 0.0, "reasoning_trace": None, "is_error": False,
             "timestamp": T0, "observation": "x" * 100} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=STEPS)


def episode(episode_id: str, task_id: str) -> dict:
    return {"run_id": "r", "episode_id": episode_id, "attempt": 1, "task_id": task_id, "model": "m", "seed": 0,
            "condition": "full", "status": "completed"}


def files(root, dataset: str) -> list:
    return sorted(p for p in (root / dataset).rglob("*") if p.is_file())


def test_a_partition_flushes_when_it_holds_flush_episodes_and_episodes_are_written_last(tmp_path):
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=3, flush_seconds=3600)
    for i in range(2):
        assert w.add("JE-1", "m", {"steps": steps(f"a{i}", "JE-1", 4)}, rows={"episodes": [episode(f"a{i}", "JE-1")]}) == []
        w.add("JE-2", "m", {"steps": steps(f"b{i}", "JE-2", 4)}, rows={"episodes": [episode(f"b{i}", "JE-2")]})
    assert files(tmp_path, "steps") == [] and w.buffered_episodes == 4
    flushed = w.add("JE-1", "m", {"steps": steps("a2", "JE-1", 4)}, rows={"episodes": [episode("a2", "JE-1")]})
    assert flushed == ["a0", "a1", "a2"]
    assert [p.parent.name for p in files(tmp_path, "steps")] == ["model=m"]
    assert w.buffered_episodes == 2  # JE-2 still buffered
    written = ds.dataset(str(tmp_path / "steps"), format="parquet", partitioning="hive").to_table()
    assert written.num_rows == 12 and set(written["episode_id"].to_pylist()) == {"a0", "a1", "a2"}
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # written under a temp name, renamed
    assert w.flush_all() == ["b0", "b1"] and w.buffered_episodes == 0


def test_flush_bytes_counts_given_sizes_and_the_count_returns_to_zero_after_a_flush(tmp_path):
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=1000, flush_seconds=3600, flush_bytes=10_000)
    batch = table_from_ipc(table_to_ipc(steps("e", "JE-1", 40)))
    part = batch.slice(0, 10)
    assert w.add("JE-1", "m", {"steps": part}, sizes={"steps": 6_000}) == []
    assert w._bytes == 6_000
    w.add("JE-2", "m", {"steps": batch.slice(10, 10)}, sizes={"steps": 6_000})
    assert len(files(tmp_path, "steps")) == 2  # over flush_bytes: every partition was flushed
    assert w._bytes == 0 and w.buffered_episodes == 0
    # without a hint the table's own nbytes is counted
    w.add("JE-1", "m", {"steps": steps("f", "JE-1", 2)})
    assert w._bytes == steps("f", "JE-1", 2).nbytes
    w.flush_all()
    assert w._bytes == 0


def test_slices_of_one_batch_table_land_in_their_own_partitions(tmp_path):
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=1000, flush_seconds=3600)
    batch = pa.concat_tables([steps("a", "JE-1", 3), steps("b", "JE-2", 5)])
    batch = table_from_ipc(table_to_ipc(batch))
    w.add("JE-1", "m", {"steps": batch.slice(0, 3)})
    w.add("JE-2", "m", {"steps": batch.slice(3, 5)})
    w.flush_all()
    t = ds.dataset(str(tmp_path / "steps"), format="parquet", partitioning="hive").to_table()
    got = sorted(zip(t["task_id"].to_pylist(), t["episode_id"].to_pylist()))
    assert got == [("JE-1", "a")] * 3 + [("JE-2", "b")] * 5


def test_background_writes_keep_every_row_and_flush_all_waits_for_them(tmp_path):
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=2, flush_seconds=3600, threads=2)
    for i in range(40):
        task = f"JE-{i % 4 + 1}"
        w.add(task, "m", {"steps": steps(f"e{i}", task, 3)}, rows={"episodes": [episode(f"e{i}", task)]})
    w.flush_all()  # waits for every background write
    assert not w._pending
    t = ds.dataset(str(tmp_path / "episodes"), format="parquet", partitioning="hive").to_table()
    assert sorted(t["episode_id"].to_pylist()) == sorted(f"e{i}" for i in range(40))
    s = ds.dataset(str(tmp_path / "steps"), format="parquet", partitioning="hive").to_table()
    assert s.num_rows == 120
    assert w.stats.rows["steps"] == 120 and w.stats.rows["episodes"] == 40 and w.stats.files["episodes"] == 20
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    w.close()


def _gated_failure(monkeypatch, task: str):
    """pq.write_table fails for ``task``'s partition once the returned gate is set."""
    import threading

    import jeval_ray.store.writer as writer_mod

    real, gate = writer_mod.pq.write_table, threading.Event()

    def write_table(table, where, **kw):
        if f"task_id={task}/" in str(where):
            gate.wait(10)
            raise OSError("disk full (simulated)")
        return real(table, where, **kw)

    monkeypatch.setattr(writer_mod.pq, "write_table", write_table)
    return gate


def _add(w, task):
    w.add(task, "m", {"steps": steps(f"e-{task}", task, 2)}, rows={"episodes": [episode(f"e-{task}", task)]})


def _written(tmp_path) -> list[str]:
    t = ds.dataset(str(tmp_path / "episodes"), format="parquet", partitioning="hive").to_table()
    return sorted(t["episode_id"].to_pylist())


def test_partitions_flushed_after_a_write_already_failed_are_still_written(tmp_path, monkeypatch):
    """JE-2's background write has failed, unreported, when flush_all reaches JE-3 and JE-4: both are
    written all the same, and the failure is raised once they are."""
    gate = _gated_failure(monkeypatch, "JE-2")
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=1000, flush_seconds=3600, threads=2)
    for task in ("JE-2", "JE-3", "JE-4"):
        _add(w, task)
    w.flush_partition(("JE-2", "m"))  # submitted; its write waits at the gate
    gate.set()
    assert isinstance(w._pending[-1].exception(timeout=10), OSError)  # failed, not yet reported
    with pytest.raises(OSError, match="disk full"):
        w.flush_all()
    assert _written(tmp_path) == ["e-JE-3", "e-JE-4"]
    w.close()


def test_an_episode_added_after_a_write_failed_is_kept_while_the_failure_is_reported(tmp_path, monkeypatch):
    gate = _gated_failure(monkeypatch, "JE-2")
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=1000, flush_seconds=3600, threads=2)
    _add(w, "JE-2")
    w.flush_partition(("JE-2", "m"))
    gate.set()
    assert isinstance(w._pending[-1].exception(timeout=10), OSError)
    with pytest.raises(OSError, match="disk full"):
        _add(w, "JE-3")  # the failure is reported here; JE-3's rows stay buffered
    _add(w, "JE-4")
    w.flush_all()
    assert _written(tmp_path) == ["e-JE-3", "e-JE-4"]
    w.close()


def test_a_failed_background_write_is_raised_and_other_partitions_are_still_written(tmp_path, monkeypatch):
    import jeval_ray.store.writer as writer_mod

    real = writer_mod.pq.write_table

    def write_table(table, where, **kw):
        if "JE-2" in str(where):
            raise OSError("disk full (simulated)")
        return real(table, where, **kw)

    monkeypatch.setattr(writer_mod.pq, "write_table", write_table)
    w = RunWriter(pafs.LocalFileSystem(), str(tmp_path), flush_episodes=1000, flush_seconds=3600, threads=2)
    for task in ("JE-1", "JE-2", "JE-3"):
        w.add(task, "m", {"steps": steps(f"e-{task}", task, 2)}, rows={"episodes": [episode(f"e-{task}", task)]})
    with pytest.raises(OSError, match="disk full"):
        w.flush_all()
    t = ds.dataset(str(tmp_path / "episodes"), format="parquet", partitioning="hive").to_table()
    assert sorted(t["episode_id"].to_pylist()) == ["e-JE-1", "e-JE-3"]
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # the failed temp file was removed
    w.close()
