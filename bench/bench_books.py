"""Benchmark of the simulated books: a year's generation and its Arrow ledger, by size.

Run: python bench/bench_books.py            (add --quick for one repetition of the 1e6 year)
Targets (issue 14): a 1e6-entry year < 5 s on 2 cores; a small world for one task slice in a few ms.

Reports wall time and the process's CPU time (the machine is shared: wall time grows with other
load, CPU time much less) and the load average while measuring.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from jeval_ray.books import simulate_year


def measure(fn, repeat: int) -> tuple[float, float, object]:
    """(median wall s, median CPU s, last result)."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def year_with_journal(seed: int, size: int):
    books = simulate_year(seed, size)
    books.journal
    return books


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    year_with_journal(0, 300)  # warm imports
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    print("| size | entries | lines | simulate wall s | simulate CPU s | + journal wall s | + journal CPU s | "
          "all tables wall s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, rep in ((300, 20), (10_000, 5), (100_000, 3), (1_000_000, 1 if args.quick else 3)):
        sw, sc, books = measure(lambda: simulate_year(0, size), rep)
        jw, jc, _ = measure(lambda: year_with_journal(0, size), rep)
        tw, _, _ = measure(lambda: simulate_year(0, size).tables(), 1)
        print(f"| {size:,} | {books.n_entries:,} | {len(books.lines.doc):,} | {sw:.3f} | {sc:.3f} | {jw:.3f} | {jc:.3f} | "
              f"{tw:.3f} |")
    print()
    print("## A small world for one task slice (300-entry year, one quarter of purchasing and close)")
    w, c, s = measure(lambda: simulate_year(3, 300).slice("2025-10-01", "2025-12-31", processes=("purchasing", "close")),
                      30)
    w2, c2, _ = measure(lambda: simulate_year(3, 300).slice("2025-10-01", "2025-12-31",
                                                             processes=("purchasing", "close")).journal, 30)
    print(f"slice of {s.n_entries} entries: simulate + slice {w * 1000:.1f} ms wall / {c * 1000:.1f} ms CPU; "
          f"+ journal table {w2 * 1000:.1f} ms wall / {c2 * 1000:.1f} ms CPU")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
