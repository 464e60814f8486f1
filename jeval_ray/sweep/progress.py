"""Sweep progress on stderr: a live rich bar, plain log lines (CI, logs) or nothing (quiet).

Counts: ``done`` (completed episodes written or buffered), ``failed`` (failed rows), ``retried``
(attempts re-dispatched after a worker died), ``skipped`` (already complete when resuming),
plus the rate and the ETA over the episodes still to play.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass


@dataclass
class Counts:
    total: int = 0
    skipped: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    in_flight: int = 0
    workers: int = 0
    budget_skipped: int = 0  # written as status skipped: a budget would have been passed

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.budget_skipped

    @property
    def to_play(self) -> int:
        return self.total - self.skipped


class Progress:
    """``mode``: ``rich`` (live bar), ``plain`` (a line every ``interval`` s), ``quiet`` or ``auto``."""

    def __init__(self, mode: str = "auto", *, interval: float = 5.0, stream=None):
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "rich" if getattr(self.stream, "isatty", lambda: False)() else "plain"
        if mode not in ("rich", "plain", "quiet"):
            raise ValueError(f"progress mode must be rich, plain, quiet or auto, got {mode!r}")
        self.mode = mode
        self.interval = interval
        self.counts = Counts()
        self._t0 = time.monotonic()
        self._last = 0.0
        self._rich = None
        self._task = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, total: int, skipped: int = 0) -> None:
        self.counts.total, self.counts.skipped = total, skipped
        self._t0 = time.monotonic()
        if self.mode == "rich":
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._rich = RichProgress(
                TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(file=self.stream), transient=False, refresh_per_second=4,
            )
            self._rich.start()
            self._task = self._rich.add_task("sweep", total=max(self.counts.to_play, 1), stats="")
        elif self.mode == "plain":
            self._print(f"sweep: {total} episodes in the grid, {skipped} already complete, {total - skipped} to play")

    def update(self, **kw) -> None:
        for k, v in kw.items():
            setattr(self.counts, k, v)
        now = time.monotonic()
        if self.mode == "rich" and self._rich is not None:
            self._rich.update(self._task, completed=self.counts.finished, stats=self._stats())
        elif self.mode == "plain" and now - self._last >= self.interval:
            self._last = now
            self._print(self.line())

    def log(self, msg: str) -> None:
        if self.mode == "quiet":
            return
        if self._rich is not None:
            self._rich.console.print(msg)
        else:
            self._print(msg)

    def stop(self) -> None:
        if self._rich is not None:
            self._rich.update(self._task, completed=self.counts.finished, stats=self._stats())
            self._rich.stop()
            self._rich = None
        elif self.mode == "plain":
            self._print(self.line(final=True))

    # ------------------------------------------------------------------ text
    def rate(self) -> float:
        el = max(time.monotonic() - self._t0, 1e-9)
        return self.counts.finished / el

    def eta_s(self) -> float | None:
        r = self.rate()
        left = self.counts.to_play - self.counts.finished
        return left / r if r > 0 else None

    def _stats(self) -> str:
        c = self.counts
        return (f"done {c.done} failed {c.failed} retried {c.retried} in-flight {c.in_flight} "
                f"{self.rate():.1f} ep/s")

    def line(self, final: bool = False) -> str:
        c = self.counts
        eta = self.eta_s()
        el = time.monotonic() - self._t0
        tail = f"elapsed {el:.0f}s" if final else f"ETA {eta:.0f}s" if eta is not None else "ETA ?"
        budget = f", skipped for budget {c.budget_skipped}" if c.budget_skipped else ""
        return (f"sweep: {c.finished}/{c.to_play} finished (done {c.done}, failed {c.failed}{budget}, retried "
                f"{c.retried}, in flight {c.in_flight}, workers {c.workers}) {self.rate():.1f} ep/s {tail}")

    def _print(self, s: str) -> None:
        print(s, file=self.stream, flush=True)


__all__ = ["Counts", "Progress"]
