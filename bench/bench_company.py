"""Benchmark of the simulated company's economics: is it a company that could exist?

Run: python bench/bench_company.py [--seeds 40000:40200] [--sizes 100,800,2000]

For each size (``n_entries``; 100 is the books' smallest year, what ``simulate_year`` makes of a task
world's n_entries below it; the tasks' default knobs are 200 (JE-1 to JE-4), 300 (JE-5 to JE-8), 400
(JE-9 to JE-11), 600 (JE-16), 800 (JE-15), 1,200 (JE-13) and 2,000 (JE-12, JE-14)) and each seed, it
simulates the year and reports the minimum, median and maximum over the seeds of the figures of
``jeval_ray.books.economics.figures``: revenue, expenses, net income, equity at year end, year-end
cash, a month of operating expense, year-end cash in months of it, and the lowest end-of-day
balance of the operating account in the books and at the bank. Amounts in USD.
The targets (issue 29, point 6): equity and net income positive, the balance never negative, and
year-end cash of at least one month of operating expense, on every seed.
"""

from __future__ import annotations

import argparse
import statistics

from jeval_ray.books import simulate_year
from jeval_ray.books.economics import figures

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="40000:40200", help="lo:hi (held-out seeds 7000-39999 are for measuring only)")
    ap.add_argument("--sizes", default="100,200,300,400,600,800,1200,2000")
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.seeds.split(":"))
    for size in (int(s) for s in args.sizes.split(",")):
        rows = [figures(simulate_year(seed, size)) for seed in range(lo, hi)]
        print(f"## size {size} (n_entries), seeds {lo}-{hi - 1} ({len(rows)} seeds)")
        print("| figure | min | median | max | seeds failing |")
        print("|---|---:|---:|---:|---:|")
        fails = {"net_income": lambda r: r["net_income"] <= 0, "equity": lambda r: r["equity"] <= 0,
                 "cash_months": lambda r: r["cash_months"] < 1, "low_book": lambda r: r["low_book"] < 0,
                 "low_bank": lambda r: r["low_bank"] < 0}
        for k in rows[0]:
            v = [r[k] for r in rows]
            bad = sum(fails[k](r) for r in rows) if k in fails else ""
            fmt = "{:,.2f}" if k == "cash_months" else "{:,.0f}"
            print(f"| {k} | {fmt.format(min(v))} | {fmt.format(statistics.median(v))} | {fmt.format(max(v))} | {bad} |")
        print()


if __name__ == "__main__":
    main()
