"""JE-3 key audit: the facts the key rationale relies on, read from the world as the agent sees it
(ledger lines, ``master:accounts``, ``master:calendar`` and the chart-of-accounts maintenance log),
over many seeds.

An auditor signs the key only if: every posting to an account changed during the year is a
month-end posting keyed by a person during that month's close (so the ERP, which checks the
account at keying, accepted it); the account's dates in the chart decide it (a defect is dated
before its account opened, a decoy inside its account's validity); the maintenance log states
the same dates, processed on business days before they took effect; the changed account is a
sub-account of the profit-and-loss account the posting would otherwise use, of the same type, and
named for what it posts (bank charges, interest, the general provision: never a general provision
on a "specific" account); nothing outside the key posts to a changed account but the other
postings of its stream, valid at their dates, a closed account's transfer to its parent and the
closing entry; and a changed account is used as a real one, not a one-off: two postings or more of
its stream, the planted posting first (opened) or last (closed) of them, for defects and decoys
alike.
"""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.agents import entries_of
from jeval_ray.world import generate_world

TASK = "JE-3"
AUDIT_SEEDS = range(20, 45)


def _changed(a: dict) -> bool:
    return a["opened"] >= "2025-01-01" or bool(a["closed"]) or a["status"] != "active"


#: each stream's document type -> (its profit-and-loss account, how its sub-accounts' names begin)
STREAMS = {"BC": ("6950", "Bank Charges - "), "BI": ("4900", "Interest Income - "), "AL": ("6500", "Bad Debt Expense - ")}


def _business_day(day: str, holidays: set[str]) -> bool:
    return dt.date.fromisoformat(day).weekday() < 5 and day not in holidays


def _valid(a: dict, day: str) -> bool:
    return a["opened"] <= day and (not a["closed"] or day <= a["closed"])


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
        lines = led.filter(pc.is_in(led["entry_id"], value_set=touched)).select(
            ["entry_id", "line_no", "account", "debit", "credit", "posting_date", "entry_timestamp", "source",
             "document_type", "preparer", "description"]).to_pylist()
        ents = entries_of(lines)
        cal = w.master["calendar"].to_pylist()
        closes = {r["description"][-7:]: r["date"] for r in cal if r["kind"] == "period_close"}
        holidays = {r["date"] for r in cal if r["kind"] == "holiday"}
        log = next(d for d in w.documents if d.title == "Chart of accounts maintenance log")
        key = {r.entry_id: r for r in (*w.defects, *w.decoys)}
        # change requests are numbered in the order they were processed, on business days
        processed = re.findall(r"^(\d{4}-\d\d-\d\d)  CR-\d{4}-(\d+)  ", log.body, flags=re.M)
        assert len(processed) == len(key) and processed == sorted(processed)
        assert [int(n) for _, n in processed] == sorted(int(n) for _, n in processed)
        assert all(_business_day(d, holidays) for d, _ in processed), seed
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        closing = {eid for eid, e in ents.items() if e["document_type"] == "YC"}
        assert len(closing) == 1 and all(str(ents[x]["posting_date"]) == "2025-12-31" for x in closing)
        # besides the closing entry: top-side transfers of closed accounts, and the streams' postings
        transfers = {eid for eid, e in ents.items() if e["document_type"] == "TS"}
        stream = {eid: e for eid, e in ents.items() if eid not in closing | transfers}
        assert set(key) <= set(stream)
        closed_decoys = {r.facts[0] for r in w.decoys if r.decoy_type == "account_closed_after_posting"}
        moved = set()
        for eid in transfers:
            e = ents[eid]
            (code,) = [x for x in e["accounts"] if _changed(chart[x])]
            # on the last business day up to the closing date, keyed by a person
            closed = chart[code]["closed"]
            day = str(e["posting_date"])
            assert code in closed_decoys and day <= closed and _business_day(day, holidays), (seed, eid)
            assert all(not _business_day(str(dt.date.fromisoformat(day) + dt.timedelta(days=k)), holidays)
                       for k in range(1, (dt.date.fromisoformat(closed) - dt.date.fromisoformat(day)).days + 1))
            assert e["document_type"] == "TS" and e["source"] == "manual"
            moved.add(code)
        assert moved == closed_decoys, seed
        # one planted posting per changed account
        assert len(changed_codes) == len(key) == len({r.facts[0] for r in key.values()})
        by_account: dict[str, list[str]] = {}
        for eid, e in stream.items():
            (code,) = [x for x in e["accounts"] if _changed(chart[x])]
            by_account.setdefault(code, []).append(eid)
            a, posted, keyed = chart[code], str(e["posting_date"]), str(e["entry_timestamp"].date())
            # a month-end posting of one of the streams, keyed by a person during that month's close
            assert e["source"] == "manual" and users[e["preparer"]]["role"] != "System"
            base, prefix = STREAMS[e["document_type"]]
            assert posted < keyed <= closes.get(posted[:7], "2026-01-09"), (seed, eid)
            # the ERP checked the account at keying: it existed and was open then
            assert a["opened"] <= keyed and (not a["closed"] or keyed <= a["closed"])
            # a sub-account of the stream's profit-and-loss account, of the same type, named for what it posts
            assert code[:2] == base[:2] and a["type"] == chart[base]["type"] and a["type"] in ("expense", "revenue")
            assert a["normal_balance"] == chart[base]["normal_balance"] and a["name"].startswith(prefix), (seed, code)
            if e["document_type"] == "AL":
                assert "general provision" in e["description"] and "specific" not in a["name"].lower(), (seed, eid)
            # the other postings of the account's stream are valid at their dates
            assert eid in key or _valid(a, posted), (seed, eid)
        for code, eids in by_account.items():
            a = chart[code]
            # used as a real account: two postings or more, all of one stream
            assert len(eids) >= 2 and len({ents[x]["document_type"] for x in eids}) == 1, (seed, code)
            (planted,) = [x for x in eids if x in key]
            first, last = min(eids, key=lambda x: str(ents[x]["posting_date"])), \
                max(eids, key=lambda x: str(ents[x]["posting_date"]))
            assert planted == (last if a["closed"] else first), (seed, code)
            if a["closed"]:
                # the transfer leaves nothing on it; nothing posts after it closed
                rows = [r for r in lines if r["account"] == code and r["entry_id"] not in closing]
                assert round(sum(r["debit"] - r["credit"] for r in rows), 2) == 0, (seed, code)
                assert all(str(r["posting_date"]) <= a["closed"] for r in rows)
        for eid, r in key.items():
            e = ents[eid]
            posted = str(e["posting_date"])
            code = r.facts[0]
            a = chart[code]
            # the maintenance log states the same dates, processed before they took effect
            base = STREAMS[e["document_type"]][0]
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
                assert _valid(a, posted), "valid at the posting date"
                assert r.facts[1:] == (a["closed"] or a["opened"], posted)
                assert r.decoy_type == ("account_closed_after_posting" if a["closed"] else "account_opened_before_posting")
    assert kinds == {"posting_before_account_opened", "account_opened_before_posting", "account_closed_after_posting"}
