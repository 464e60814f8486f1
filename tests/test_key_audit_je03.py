"""JE-3 key audit: the facts the key rationale relies on, read from the world as the agent sees it
(ledger lines, ``master:accounts``, ``master:calendar`` and the chart-of-accounts maintenance log),
over many seeds.

An auditor signs the key only if: every posting to an account changed during the year is a
month-end posting keyed by a person during that month's close (so the ERP, which checks the
account at keying, accepted it); the account's dates in the chart decide it (a defect is dated
before its account opened, a decoy inside its account's validity); the maintenance log states
the same dates, processed before they took effect; the changed account is a sub-account of the
profit-and-loss account the posting would otherwise use, of the same type; and nothing outside
the key posts to a changed account (the books post only to standing accounts).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.agents import entries_of
from jeval_ray.world import generate_world

TASK = "JE-3"
AUDIT_SEEDS = range(20, 45)


def _changed(a: dict) -> bool:
    return a["opened"] >= "2025-01-01" or bool(a["closed"]) or a["status"] != "active"


def test_key_audit_chart_dates_decide_every_posting_to_a_changed_account():
    kinds = set()
    for seed in AUDIT_SEEDS:
        w = generate_world(TASK, seed)
        chart = {a["account"]: a for a in w.master["accounts"].to_pylist()}
        led = w.ledger
        # every account posted exists in the chart
        assert set(pc.unique(led["account"]).to_pylist()) <= set(chart)
        changed_codes = sorted(c for c, a in chart.items() if _changed(a))
        touched = pc.unique(led.filter(pc.is_in(led["account"], value_set=pa.array(changed_codes)))["entry_id"])
        ents = entries_of(led.filter(pc.is_in(led["entry_id"], value_set=touched)).select(
            ["entry_id", "line_no", "account", "debit", "posting_date", "entry_timestamp", "source", "document_type",
             "preparer"]).to_pylist())
        closes = {r["description"][-7:]: r["date"] for r in w.master["calendar"].to_pylist() if r["kind"] == "period_close"}
        log = next(d for d in w.documents if d.title == "Chart of accounts maintenance log")
        key = {r.entry_id: r for r in (*w.defects, *w.decoys)}
        # change requests are numbered in the order they were processed
        processed = re.findall(r"^(\d{4}-\d\d-\d\d)  CR-\d{4}-(\d+)  ", log.body, flags=re.M)
        assert len(processed) == len(key) and processed == sorted(processed)
        assert [int(n) for _, n in processed] == sorted(int(n) for _, n in processed)
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        # nothing outside the key posts to a changed account, except the transfer that empties a closed
        # account into its parent on the day it closes, and the year-end closing entry
        closing = {eid for eid, e in ents.items() if e["document_type"] == "YC"}
        assert len(closing) == 1 and all(str(ents[x]["posting_date"]) == "2025-12-31" for x in closing)
        transfers = {eid for eid in ents if eid not in key} - closing
        assert set(ents) - transfers - closing == set(key), seed
        closed_decoys = {r.facts[0] for r in w.decoys if r.decoy_type == "account_closed_after_posting"}
        moved = set()
        for eid in transfers:
            e = ents[eid]
            (code,) = [x for x in e["accounts"] if _changed(chart[x])]
            assert code in closed_decoys and str(e["posting_date"]) == chart[code]["closed"], (seed, eid)
            assert e["document_type"] == "TS" and e["source"] == "manual"
            moved.add(code)
        assert moved == closed_decoys, seed
        assert len(changed_codes) == len(key), "one planted posting per changed account"
        for eid, r in key.items():
            e = ents[eid]
            posted, keyed = str(e["posting_date"]), str(e["entry_timestamp"].date())
            code = r.facts[0]
            a = chart[code]
            assert [x for x in e["accounts"] if _changed(chart[x])] == [code]
            # a month-end posting keyed by a person during that month's close
            assert e["source"] == "manual" and users[e["preparer"]]["role"] != "System"
            assert e["document_type"] in ("BC", "BI", "AL", "TS")
            assert posted < keyed <= closes[posted[:7]]
            # the ERP checked the account at keying: it existed and was open then
            assert a["opened"] <= keyed and (not a["closed"] or keyed <= a["closed"])
            # a sub-account of the profit-and-loss account such postings use, of the same type
            base = code[:2] + "00" if code[:2] != "69" else "6950"
            assert base in chart and a["type"] == chart[base]["type"] and a["type"] in ("expense", "revenue")
            assert a["normal_balance"] == chart[base]["normal_balance"]
            # the maintenance log states the same dates, processed before they took effect
            if a["closed"]:
                m = re.search(rf"(\d{{4}}-\d\d-\d\d)  CR-\S+  Close account {code} .*?dated up to (\S+);", log.body)
                assert m and m.group(2) == a["closed"] and m.group(1) < a["closed"]
            else:
                m = re.search(rf"(\d{{4}}-\d\d-\d\d)  CR-\S+  Open account {code} .*?split out of {base}\), valid for "
                              rf"postings dated from (\S+)\.", log.body)
                assert m and m.group(2) == a["opened"] and m.group(1) < a["opened"]
            if eid in w.defect_ids:
                kinds.add(r.defect_type)
                assert posted < a["opened"], "dated before the account opened"
                assert r.facts[1:] == (a["opened"], posted) and r.required_evidence == ("master:accounts",)
            else:
                kinds.add(r.decoy_type)
                assert a["opened"] <= posted and (not a["closed"] or posted <= a["closed"]), "valid at the posting date"
                assert r.facts[1:] == (a["closed"] or a["opened"], posted)
                assert r.decoy_type == ("account_closed_after_posting" if a["closed"] else "account_opened_before_posting")
    assert kinds == {"posting_before_account_opened", "account_opened_before_posting", "account_closed_after_posting"}
