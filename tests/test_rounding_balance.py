"""Every world's ledger balances, and an accepted upload residual is rounding within three standard
deviations (issue 29, point 3).

The ERP posts only balanced documents: the GL upload tool (JE-1) and the billing interface (JE-16)
post each upload's residual on a line of its own to a rounding (7990) or suspense (2990) account, so
every entry balances and the year's debits equal its credits. A residual the policy accepts (a
decoy's) is at most USD 0.0087 x sqrt(n) for an upload of n rounded lines: three standard deviations
of n independent roundings, each uniform within half a cent. The checks read the world as the agent
sees it (the listing, the trial balance, the policy and the upload files or rounding reports).

That every world balances (each entry, the year and the closing trial balance) is checked over 500
seeds per task by ``tests/test_always_generate.py`` and over 10,000 by ``bench/bench_generate.py``.
"""

from __future__ import annotations

import math
import os
import re

import pyarrow.compute as pc
import pytest

from jeval_ray.tasks.taskkit import ROUNDING_LIMIT
from jeval_ray.world import generate_world

#: worlds a task whose accepted residuals are checked (``JEVAL_BALANCE_SEEDS`` sets another count)
BALANCE_SEEDS = range(int(os.environ.get("JEVAL_BALANCE_SEEDS", "30")))


def test_the_rounding_tolerance_is_three_standard_deviations_of_half_cent_roundings():
    # one rounding to the cent is uniform on [-0.5, 0.5] cents: standard deviation 0.5 / sqrt(3)
    sd = 0.5 / math.sqrt(3)
    for n in (1, 4, 12, 100, 494, 2500):
        assert ROUNDING_LIMIT.limit_cents(n) == pytest.approx(3 * sd * math.sqrt(n), rel=0.005)
    # the 0.97 once accepted over 494 lines is about 15 standard deviations; the rule accepts 0.19
    assert ROUNDING_LIMIT.check("allocation", 494, 97, 100).ok is False
    assert ROUNDING_LIMIT.check("allocation", 494, 19, 100).ok is True


def _je01_residuals(w) -> dict[str, tuple[float, int]]:
    """JE-1 decoy -> (the residual in the rounding account, the rounded lines of its upload file)."""
    led = w.ledger
    rows = led.filter(pc.equal(led["account"], "7990")).to_pylist()
    posted = {r["entry_id"]: abs(r["credit"] - r["debit"]) for r in rows if r["source"] == "manual"}
    out = {}
    for d in w.decoys:
        if d.entry_id not in posted:  # a suspense item (beyond the tool's tolerance, cleared by a journal)
            continue
        f = next(w.document(x) for x in d.clearing_evidence if w.document(x).doc_type == "upload_file")
        out[d.entry_id] = (posted[d.entry_id], int(re.search(r"Lines: (\d+)", f.body).group(1)))
    return out


def _je16_residuals(w) -> dict[str, tuple[float, int]]:
    """JE-16 rounding decoy -> (the residual on suspense, the upload's priced lines on the report)."""
    led = w.ledger
    posted = {r["entry_id"]: (abs(r["credit"] - r["debit"]), r["reference"])
              for r in led.filter(pc.equal(led["account"], "2990")).to_pylist()}
    out = {}
    for d in w.decoys:
        if d.decoy_type != "interface_rounding_reported":
            continue
        amount, ref = posted[d.entry_id]
        body = w.document(d.clearing_evidence[1]).body
        n = int(re.search(rf"^{re.escape(ref)} \| (\d+) priced lines \|", body, re.M).group(1))
        out[d.entry_id] = (amount, n)
    return out


@pytest.mark.parametrize("task_id,read", [("JE-1", _je01_residuals), ("JE-16", _je16_residuals)])
def test_accepted_residuals_are_within_three_standard_deviations(task_id, read):
    seen = 0
    for seed in BALANCE_SEEDS:
        for eid, (amount, n) in read(generate_world(task_id, seed)).items():
            seen += 1
            assert 0 < amount <= 0.0087 * math.sqrt(n) + 1e-9, f"{task_id} seed {seed} {eid}: {amount} over {n} lines"
    assert seen >= len(BALANCE_SEEDS), "every world accepts some residual"
