"""Batched, atomic, collision-free Parquet writes of a sweep run (layout: docs/sweep.md).

Layout: ``<root>/<run_id>/{steps,episodes,dispositions,judgments}/task_id=<t>/model=<m>/part-<uuid>.parquet``
(hive partitioning; values URI-encoded, so ``org/model`` becomes ``org%2Fmodel``; partition
columns live in the path, not in the files) plus ``<root>/<run_id>/manifest.json``.

- Batched: rows are buffered per (task, model) partition and written when a partition holds
  ``flush_episodes`` episodes, when ``flush_seconds`` have passed, or when ``flush_bytes`` are buffered.
- Unique: every file name carries a uuid4, so concurrent or repeated writers never collide.
- Atomic: on a local filesystem a file is written under a hidden temporary name
  (``.part-….tmp``, ignored by every reader) and renamed; on object stores a single PUT is atomic.
- Commit order: within a flush the ``episodes`` file of a partition is written last. An episode
  counts as done (resume skips it) only when its episodes row exists, so rows written before a
  crash without their episode row are orphans that the readers' dedup rule drops.
- Background writes (``threads > 0``): a flush hands each partition's files to a thread pool
  (Parquet encoding releases the GIL), so the sweep's scheduling loop goes on while files are
  written. ``flush_all()`` waits for every pending write; an error of a background write is
  raised by the next call. At most ``2 * threads`` partition writes are pending at once.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from jeval_ray.records.schemas import DATASETS, PARTITION_COLUMNS
from jeval_ray._fs import encode_segment, is_local

#: Datasets in write order: ``episodes`` last (it is the commit record of an episode).
WRITE_ORDER: tuple[str, ...] = ("steps", "dispositions", "judgments", "episodes")


def partition_dir(run_path: str, dataset: str, task_id: str, model: str) -> str:
    return f"{run_path}/{dataset}/task_id={encode_segment(task_id)}/model={encode_segment(model)}"


def write_file_atomic(fs, path: str, writer_fn) -> None:
    """Write ``path`` via ``writer_fn(tmp_or_final_path)``; rename from a hidden temp name on local disks."""
    if is_local(fs):
        d, _, base = path.rpartition("/")
        tmp = f"{d}/.{base}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            writer_fn(tmp)
            fs.move(tmp, path)
        except BaseException:
            try:
                fs.delete_file(tmp)
            except OSError:
                pass
            raise
    else:
        writer_fn(path)


def write_json_atomic(fs, path: str, obj) -> None:
    data = json.dumps(obj, indent=2, sort_keys=True, default=str).encode()

    def _w(p: str) -> None:
        with fs.open_output_stream(p) as f:
            f.write(data)

    write_file_atomic(fs, path, _w)


@dataclass
class WriterStats:
    files: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    rows: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    bytes_buffered_peak: int = 0
    write_seconds: float = 0.0
    flushes: int = 0
    episodes_written: int = 0


class RunWriter:
    """Buffers record tables per partition and writes them as Parquet parts."""

    def __init__(self, fs, run_path: str, *, flush_episodes: int = 64, flush_seconds: float = 20.0,
                 flush_bytes: int = 64 << 20, compression: str = "zstd", threads: int = 0):
        self.fs, self.run_path = fs, run_path.rstrip("/")
        self.flush_episodes, self.flush_seconds, self.flush_bytes = flush_episodes, flush_seconds, flush_bytes
        self.compression = compression
        self._buf: dict[tuple[str, str], dict[str, list[pa.Table | dict]]] = {}
        self._count: dict[tuple[str, str], int] = defaultdict(int)
        self._pbytes: dict[tuple[str, str], int] = defaultdict(int)  # bytes buffered per partition
        self._bytes = 0
        self._last_flush = time.monotonic()
        self._dirs: set[str] = set()
        self.stats = WriterStats()
        self._lock = threading.Lock()  # guards stats updated by background writes
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="jeval-writer") if threads > 0 else None
        self._max_pending = 2 * max(threads, 1)
        self._pending: deque[Future] = deque()

    @property
    def buffered_episodes(self) -> int:
        return sum(self._count.values())

    def add(self, task_id: str, model: str, tables: dict[str, pa.Table], n_episodes: int = 1,
            rows: dict[str, list[dict]] | None = None, sizes: dict[str, int] | None = None) -> list[str]:
        """Buffer one episode's tables (and small datasets as row dicts, converted once per flush);
        returns the episode ids flushed as a result (possibly none).

        ``sizes`` may give each table's size in bytes (e.g. for slices of a larger table, whose
        exact ``nbytes`` is costly to compute); otherwise ``nbytes`` is used. A failed background
        write is raised here, after these rows are buffered (they are written by the next flush).
        """
        key = (task_id, model)
        buf = self._buf.setdefault(key, {name: [] for name in DATASETS})
        added = 0
        for name, t in tables.items():
            if t is not None and t.num_rows:
                buf[name].append(t)
                added += sizes[name] if sizes and name in sizes else t.nbytes
        for name, rs in (rows or {}).items():
            if rs:
                buf[name].extend(rs)
                added += 512 * len(rs)  # a row dict's rough size: small next to the steps
        self._bytes += added
        self._pbytes[key] += added
        self._count[key] += n_episodes
        self.stats.bytes_buffered_peak = max(self.stats.bytes_buffered_peak, self._bytes)
        self._reap()
        if self._bytes >= self.flush_bytes:
            return self.flush_all()
        if self._count[key] >= self.flush_episodes:
            return self.flush_partition(key)
        return []

    def maybe_flush(self) -> list[str]:
        """Flush everything when ``flush_seconds`` have passed since the last full flush (without
        waiting for background writes)."""
        self._reap()
        if self._buf and time.monotonic() - self._last_flush >= self.flush_seconds:
            return self.flush_all(wait=False)
        return []

    def flush_all(self, wait: bool = True) -> list[str]:
        """Flush every partition; with ``wait`` (the default) return only once every file is written."""
        done: list[str] = []
        first: BaseException | None = None
        for key in list(self._buf):
            try:
                done += self.flush_partition(key)
            except Exception as exc:  # noqa: BLE001 - a failed write (this one or an earlier background one):
                first = first or exc  # every other partition is still flushed, then the first error is raised
        self._last_flush = time.monotonic()
        if wait:
            try:
                self.wait()
            except Exception as exc:  # noqa: BLE001
                first = first or exc
        if first is not None:
            raise first
        return done

    def wait(self) -> None:
        """Wait for every pending background write; raise the first error among them."""
        first: BaseException | None = None
        while self._pending:
            exc = self._pending.popleft().exception()
            first = first or exc
        if first is not None:
            raise first

    def close(self) -> None:
        """Wait for pending writes and stop the writer threads (buffered rows are not flushed)."""
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def _reap(self) -> None:
        """Drop finished background writes (raising the first error); bound how many are pending."""
        while self._pending and (self._pending[0].done() or len(self._pending) >= self._max_pending):
            exc = self._pending.popleft().exception()
            if exc is not None:
                raise exc

    def flush_partition(self, key: tuple[str, str]) -> list[str]:
        buf = self._buf.pop(key, None)
        n = self._count.pop(key, 0)
        self._bytes -= self._pbytes.pop(key, 0)
        if not buf:
            return []
        ids: list[str] = []
        jobs: list[tuple[str, str, pa.Table]] = []  # (dataset, directory, table) in WRITE_ORDER: episodes last
        for name in WRITE_ORDER:
            parts = buf.get(name) or []
            if not parts:
                continue
            dicts = [p for p in parts if isinstance(p, dict)]
            tables = [p for p in parts if not isinstance(p, dict)]
            if dicts:
                tables.append(pa.Table.from_pylist(dicts, schema=DATASETS[name]))
            table = pa.concat_tables(tables)
            jobs.append((name, self._dir(name, key), table))
            if name == "episodes":
                ids = table.column("episode_id").to_pylist()
        if self._pool is None:
            self._write_partition(jobs, n)
        else:  # submitted before reaping: an earlier write's error must not drop this partition's rows
            self._pending.append(self._pool.submit(self._write_partition, jobs, n))
            self._reap()
        return ids

    def _dir(self, name: str, key: tuple[str, str]) -> str:
        d = partition_dir(self.run_path, name, *key)
        if d not in self._dirs:
            self.fs.create_dir(d, recursive=True)
            self._dirs.add(d)
        return d

    def _write_partition(self, jobs: list[tuple[str, str, pa.Table]], n_episodes: int) -> None:
        """Write one partition's files in order (a thread may run this)."""
        t0 = time.perf_counter()
        for name, d, table in jobs:
            # The partition columns are in the path; the files hold everything else.
            body = table.drop_columns(list(PARTITION_COLUMNS))
            path = f"{d}/part-{uuid.uuid4().hex}.parquet"
            write_file_atomic(self.fs, path, lambda p: pq.write_table(body, p, filesystem=self.fs, compression=self.compression))
            with self._lock:
                self.stats.files[name] += 1
                self.stats.rows[name] += table.num_rows
        with self._lock:
            self.stats.write_seconds += time.perf_counter() - t0
            self.stats.flushes += 1
            self.stats.episodes_written += n_episodes


__all__ = ["RunWriter", "WRITE_ORDER", "WriterStats", "partition_dir", "write_file_atomic", "write_json_atomic"]
