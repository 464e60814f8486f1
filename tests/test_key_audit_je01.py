"""JE-1 key audit: the facts the key rationale relies on, read from the world as the agent sees it
(ledger lines, the policy, the upload files), over many seeds.

An auditor signs the key only if: every unbalanced entry is an upload the policy describes (an
accrual or top-side adjustment keyed by a person, within the tool's tolerance); its upload file
is dated the day it was keyed and states the entry's reference, accounts and posted totals; a
decoy's file is an allocation of the credited amount whose rounding limit covers the difference;
a defect's file is keyed in amounts or too short for rounding to explain it; and nothing outside
the key is unbalanced (the books post only balanced entries: the red-flag rule catches no
unplanted entry).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.agents import entries_of
from jeval_ray.world import generate_world

TASK = "JE-1"
AUDIT_SEEDS = range(20, 50)


def _money(text: str) -> float:
    return float(text.replace(",", ""))


def test_key_audit_upload_files_decide_every_unbalanced_entry():
    unplanted = caught_unplanted = 0
    for seed in AUDIT_SEEDS:
        w = generate_world(TASK, seed)
        led = w.ledger
        sums = led.group_by("entry_id").aggregate([("debit", "sum"), ("credit", "sum")])
        off = pc.greater(pc.abs(pc.subtract(sums["debit_sum"], sums["credit_sum"])), 0.004)
        unbalanced = set(sums.filter(off)["entry_id"].to_pylist())
        policy = next(d for d in w.documents if d.title == "Journal entry policy - balancing and rounding")
        tol = float(re.search(r"differ by more than USD ([\d.]+)\.", policy.body).group(1))
        per_line = float(re.search(r"at most USD ([\d.]+) \(half a cent\) per rounded line", policy.body).group(1))
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        key = {r.entry_id: r for r in (*w.defects, *w.decoys)}
        ents = entries_of(led.filter(pc.is_in(led["entry_id"], value_set=pa.array(sorted(key)))).select(
            ["entry_id", "line_no", "account", "debit", "credit", "reference", "preparer", "source", "entry_timestamp",
             "posting_date"]).to_pylist())
        # nothing outside the key breaks the rule
        unplanted += sums.num_rows - len(key)
        caught_unplanted += len(unbalanced - set(key))
        assert unbalanced == set(key), seed
        for eid, r in key.items():
            v = ents[eid]
            diff = round(abs(v["total_debit"] - v["total_credit"]), 2)
            # an upload: an accrual or top-side adjustment keyed by a person, within the tool's tolerance
            assert v["reference"].split("-")[0] in ("AC", "TS") and v["source"] == "manual"
            assert users[v["preparer"]]["role"] != "System" and 0.03 - 1e-9 <= diff <= tol + 1e-9
            evidence = r.required_evidence if eid in w.defect_ids else r.clearing_evidence
            assert policy.doc_id in evidence
            files = [w.document(x) for x in evidence if x.startswith("DOC-") and w.document(x).doc_type == "upload_file"]
            assert len(files) == 1
            f = files[0]
            # the file supports this entry: reference, entry, dates, accounts and posted figures agree
            assert v["reference"] in f.title and eid in f.body and f.date == str(v["entry_timestamp"].date())
            assert f.date >= str(v["posting_date"]) or v["reference"].startswith(("AC", "TS"))
            dr = next(a for a in v["accounts"] if a.startswith(("5", "6", "7")))
            cr = next(a for a in v["accounts"] if a.startswith("2"))
            assert f"Debit: account {dr}," in f.body and f"Credit: account {cr}, one line of {v['total_credit']:,.2f}" in f.body
            posted = re.search(r"Posted in the ledger: debit ([\d,.]+), credit ([\d,.]+); difference ([\d.]+)\.", f.body)
            assert (_money(posted.group(1)), _money(posted.group(2)), _money(posted.group(3))) == \
                (v["total_debit"], v["total_credit"], diff)
            basis = re.search(r"Basis: ([a-z]+)\.", f.body).group(1)
            n = int(re.search(r"Lines: (\d+)", f.body).group(1))
            if basis == "allocation":
                allocated = _money(re.search(r"amount allocated ([\d,.]+);", f.body).group(1))
                assert allocated == v["total_credit"], "an allocation spreads the credited amount"
            if eid in w.defect_ids:
                assert basis == "keyed" or diff > n * per_line + 1e-9, (seed, eid)
                assert r.defect_type == ("keyed_file_not_balanced" if basis == "keyed" else
                                         "difference_exceeds_rounding_limit")
            else:
                assert basis == "allocation" and diff <= n * per_line + 1e-9, (seed, eid)
    # the look-alike rate stated in the task docstring: the books post only balanced entries
    assert unplanted > 10_000 and caught_unplanted == 0
