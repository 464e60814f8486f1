"""JE-1 key audit: the facts the key rationale relies on, read from the world as the agent sees it
(ledger lines, the policy, the upload files), over many seeds.

An auditor signs the key only if: every entry balances (the upload tool posts each residual to
7990 Rounding Differences on a line of its own); every residual in the rounding account is an
upload the policy describes (an accrual or top-side adjustment keyed by a person, within the tool's
tolerance); its upload file is dated the day it was keyed and states the entry's reference,
accounts, totals and residual; a decoy's file is an allocation of the credited amount whose
tolerance (USD 0.0087 x sqrt(n), three standard deviations of n half-cent roundings) covers the
residual; a defect's file is keyed in amounts or too short for that tolerance to cover it; and
nothing outside the key posts to the rounding account (the books post no rounding: the red-flag
rule catches no unplanted entry).
"""

from __future__ import annotations

import math
import re

import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.agents import entries_of
from jeval_ray.world import generate_world

TASK = "JE-1"
AUDIT_SEEDS = range(20, 50)


def _money(text: str) -> float:
    return float(text.replace(",", ""))


def test_key_audit_upload_files_decide_every_residual_in_the_rounding_account():
    unplanted = caught_unplanted = 0
    for seed in AUDIT_SEEDS:
        w = generate_world(TASK, seed)
        led = w.ledger
        sums = led.group_by("entry_id").aggregate([("debit", "sum"), ("credit", "sum")])
        off = pc.greater(pc.abs(pc.subtract(sums["debit_sum"], sums["credit_sum"])), 0.004)
        assert sums.filter(off).num_rows == 0, f"seed {seed}: every entry balances"
        rounding = led.filter(pc.and_(pc.equal(led["account"], "7990"), pc.equal(led["source"], "manual")))
        posted = set(rounding["entry_id"].to_pylist())
        residual = {r["entry_id"]: round(r["credit"] - r["debit"], 2) for r in rounding.to_pylist()}
        policy = next(d for d in w.documents if d.title == "Journal entry policy - balancing and rounding")
        tol = float(re.search(r"differ by more than USD ([\d.]+)\.", policy.body).group(1))
        per_root = float(re.search(r"half-cent roundings, USD ([\d.]+) x sqrt\(n\)", policy.body).group(1))
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        key = {r.entry_id: r for r in (*w.defects, *w.decoys)}
        ents = entries_of(led.filter(pc.is_in(led["entry_id"], value_set=pa.array(sorted(key)))).select(
            ["entry_id", "line_no", "account", "debit", "credit", "reference", "preparer", "source", "entry_timestamp",
             "posting_date"]).to_pylist())
        # nothing outside the key posts to the rounding account
        unplanted += sums.num_rows - len(key)
        caught_unplanted += len(posted - set(key))
        # the suspense items: uploads posting to 2991 (the clearing journals aside) are the rest of the key
        susp = led.filter(pc.and_(pc.equal(led["account"], "2991"), pc.equal(led["source"], "manual"))).to_pylist()
        in_suspense = {x["entry_id"] for x in susp if not x["description"].startswith("Suspense clearing")}
        assert posted | in_suspense == set(key) and not posted & in_suspense, seed
        caught_unplanted += len(in_suspense - set(key))
        for eid, r in key.items():
            if eid in in_suspense:
                continue
            v = ents[eid]
            diff = abs(residual[eid])
            # an upload: an accrual or top-side adjustment keyed by a person, within the tool's tolerance
            assert v["reference"].split("-")[0] in ("AC", "TS") and v["source"] == "manual"
            assert users[v["preparer"]]["role"] != "System" and 0.03 - 1e-9 <= diff <= tol + 1e-9
            evidence = r.required_evidence if eid in w.defect_ids else r.clearing_evidence
            assert policy.doc_id in evidence
            files = [w.document(x) for x in evidence if x.startswith("DOC-") and w.document(x).doc_type == "upload_file"]
            assert len(files) == 1
            f = files[0]
            # the file supports this entry: reference, entry, dates, accounts and figures agree
            assert v["reference"] in f.title and eid in f.body and f.date == str(v["entry_timestamp"].date())
            dr = next(a for a in v["accounts"] if a.startswith(("5", "6", "7")) and a != "7990")
            cr = next(a for a in v["accounts"] if a.startswith("2"))
            debit = round(sum(x["debit"] for x in led.filter(pc.and_(pc.equal(led["entry_id"], eid),
                                                                      pc.equal(led["account"], dr))).to_pylist()), 2)
            credit = round(sum(x["credit"] for x in led.filter(pc.and_(pc.equal(led["entry_id"], eid),
                                                                        pc.equal(led["account"], cr))).to_pylist()), 2)
            assert f"Debit: account {dr}," in f.body and f"Credit: account {cr}, one line of {credit:,.2f}" in f.body
            stated = re.search(r"Posted in the ledger: debit ([\d,.]+), credit ([\d,.]+); residual ([\d.]+) posted to "
                               r"account 7990", f.body)
            assert (_money(stated.group(1)), _money(stated.group(2)), _money(stated.group(3))) == (debit, credit, diff)
            # the residual balances the file: debits less credits, posted on the other side
            assert round(debit - credit, 2) == residual[eid]
            basis = re.search(r"Basis: ([a-z]+)\.", f.body).group(1)
            n = int(re.search(r"Lines: (\d+)", f.body).group(1))
            if basis == "allocation":
                allocated = _money(re.search(r"amount allocated ([\d,.]+);", f.body).group(1))
                assert allocated == credit, "an allocation spreads the credited amount"
            limit = per_root * math.sqrt(n)
            if eid in w.defect_ids:
                assert basis == "keyed" or diff > limit + 1e-9, (seed, eid)
                assert r.defect_type == ("keyed_file_not_balanced" if basis == "keyed" else
                                         "difference_exceeds_rounding_limit")
            else:
                assert basis == "allocation" and diff <= limit + 1e-9, (seed, eid)
    # the look-alike rate stated in the task docstring: the books post no rounding
    assert unplanted > 10_000 and caught_unplanted == 0


def test_key_audit_suspense_items_over_the_tolerance_follow_their_investigation_records():
    """A suspense item is an upload whose residual exceeds the tool's tolerance; its record names it
    and its residual; the key is a decoy exactly when the journal the record names is in the ledger,
    posted by year end, moving the residual to the account the record found."""
    for seed in AUDIT_SEEDS:
        w = generate_world(TASK, seed)
        led = w.ledger.to_pylist()
        policy = next(d for d in w.documents if d.title == "Journal entry policy - balancing and rounding")
        tol = float(re.search(r"differ by more than USD ([\d.]+)\.", policy.body).group(1))
        susp = [x for x in led if x["account"] == "2991" and x["source"] == "manual"]
        uploads = {x["entry_id"]: x for x in susp if not x["description"].startswith("Suspense clearing")}
        by_ref: dict[str, list[dict]] = {}
        for x in led:
            by_ref.setdefault(x["reference"], []).append(x)
        kinds = {r.entry_id: getattr(r, "defect_type", None) or r.decoy_type for r in (*w.defects, *w.decoys)}
        for eid, x in uploads.items():
            diff = round(abs(x["debit"] - x["credit"]), 2)
            assert diff > tol and x["reference"].split("-")[0] in ("AC", "TS")
            rec = next(d for d in w.documents if d.title == f"Suspense investigation {x['reference']}")
            assert eid in rec.body and f"residual {diff:.2f} posted to account 2991" in rec.body
            m = re.search(r"journal (TS-\d+) with posting date (\d{4}-\d{2}-\d{2}); (debit|credit) account (\d+) "
                          r"([\d.]+) against", rec.body)
            journal, found = m.group(1), m.group(4)
            lines = by_ref.get(journal, [])
            ok = bool(lines) and all(str(y["posting_date"]) <= "2025-12-31" for y in lines) and \
                {y["account"] for y in lines} == {"2991", found} and \
                all(round(y["debit"] + y["credit"], 2) == diff for y in lines)
            assert ok is (kinds[eid] == "suspense_cleared_as_investigated"), (seed, eid, kinds[eid])
