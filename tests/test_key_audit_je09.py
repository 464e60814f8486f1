"""JE-9 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (ledger, master data, documents), and nothing outside the key breaks the policy.

Each check reads what an auditor reads: the delivery note's ship date, the post-closing request's
decision, the top-side support's figure, the vendor statement's January invoice, the calendar's
close date and the entry's own timestamp."""

from __future__ import annotations

import datetime as dt
import functools
import re

import numpy as np
import pytest

from jeval_ray.tasks.je09 import (ACCRUAL_TOLERANCE, CLOSE_LOG_TITLE, FY_END_CLOSE, POLICY_TITLE, REVENUE_ACCOUNT,
                                  WINDOW_START, YEAR_END)
from jeval_ray.world import generate_world
from jeval_ray.builder._base import month_close_dates

KEY_SEEDS = range(24)  # a world takes ~40 ms; the look-alike rate test reads seeds 0-49
CLOSES = dict(month_close_dates())


@functools.lru_cache(maxsize=64)
def _world(seed: int):
    return generate_world("JE-9", seed)


@functools.lru_cache(maxsize=64)
def _heads(seed: int) -> dict[str, dict]:
    return _headers(_world(seed))


def _headers(world) -> dict[str, dict]:
    """One row per entry: header fields, the entry's total debit and its product revenue."""
    out: dict[str, dict] = {}
    for r in world.ledger.to_pylist():
        h = out.setdefault(r["entry_id"], {**r, "total": 0.0, "revenue": 0.0, "accounts": set()})
        h["total"] = round(h["total"] + r["debit"], 2)
        h["accounts"].add(r["account"])
        if r["account"] == REVENUE_ACCOUNT:
            h["revenue"] = round(h["revenue"] + r["credit"] - r["debit"], 2)
    return out


def _recorded(h) -> str:
    return str(h["entry_timestamp"].date())


def _posted(h) -> str:
    return str(h["posting_date"])


def _in_window(h) -> bool:
    return h["revenue"] > 0 and WINDOW_START <= _posted(h) <= YEAR_END


def _after_close(h) -> bool:
    return h["document_type"] != "YC" and _recorded(h) > CLOSES[_posted(h)[:7]]


def _usd(s: str) -> float:
    return float(s.replace(",", ""))


def _note_of(world, ref: str):
    """The delivery note filed under a billing reference: (doc id, ship date)."""
    for d in world.documents:
        if d.doc_type == "shipping_document" and f" - {ref} " in d.title:
            return d.doc_id, re.search(r"Ship date[^:]*:\s*(\d{4}-\d{2}-\d{2})", d.body).group(1)
    return None, None


def _request_of(world, ref: str):
    for d in world.documents:
        if d.title.startswith("Post-closing adjustment request") and f"Entry reference: {ref}\n" in d.body:
            dec = re.search(r"Decision: (Approved|Rejected) .*? on (\d{4}-\d{2}-\d{2})", d.body)
            amt = re.search(r"on \d{4}-\d{2}-\d{2}, for USD ([\d,]+\.\d\d)", d.body)
            return d, {"status": dec.group(1), "date": dec.group(2), "amount": _usd(amt.group(1)) if amt else None}
    return None, None


def _support_of(world, ref: str):
    """The close-binder support of a top-side entry: (document, the figure it states)."""
    docs = [d for d in world.documents if d.title.endswith(f"({ref})")]
    assert len(docs) == 1, ref
    figures = re.findall(r"USD ([\d,]+\.\d\d)", docs[0].body)
    assert len(figures) == 1, docs[0].body  # one figure: nothing else for the auditor to pick
    return docs[0], _usd(figures[0])


def _statement_of(world, vendor_id: str):
    """The vendor's statement at 2026-01-31: (document, December invoice amount or None)."""
    docs = [d for d in world.documents if d.title.startswith("Statement of account") and f"({vendor_id})" in d.title]
    assert len(docs) == 1, vendor_id
    m = re.search(r"for December 2025 [^:]*: USD ([\d,]+\.\d\d)", docs[0].body)
    return docs[0], (_usd(m.group(1)) if m else None)


def _authorised(h, req) -> bool:
    """The policy's test: approved before the entry was recorded, for the amount posted."""
    return (req is not None and req["status"] == "Approved" and req["date"] < _recorded(h)
            and req["amount"] == pytest.approx(h["total"]))


@pytest.mark.parametrize("seed", KEY_SEEDS)
def test_key_audit_defects_are_proved_by_their_evidence(seed):
    w = _world(seed)
    heads = _heads(seed)
    policy = next(d.doc_id for d in w.documents if d.doc_type == "policy" and "cut-off" in d.title.lower())
    for d in w.defects:
        h = heads[d.entry_id]
        assert d.entry_id in d.required_evidence and policy in d.required_evidence
        if d.defect_type != "post_closing_entry_unauthorised":  # a control deviation counts whatever its amount
            assert d.misstatement >= w.facts["clearly_trivial"], (d.defect_type, d.misstatement)
        if d.defect_type == "revenue_before_shipment":
            assert d.criteria == "CUTOFF" and _in_window(h) and h["source"] == "automated"
            doc, ship = _note_of(w, h["reference"])
            assert doc in d.required_evidence and ship >= "2026-01-01"  # the carrier took the goods in FY2026
            assert np.is_busday(np.datetime64(ship), holidays=["2026-01-01"])
            assert d.misstatement == pytest.approx(h["revenue"])
            assert {doc, ship, _posted(h), f"{h['revenue']:.2f}"} <= set(d.facts)
        elif d.defect_type == "post_closing_entry_unauthorised":
            assert d.criteria == "CUTOFF" and h["source"] == "manual"
            assert _posted(h).startswith("2025-12") and _recorded(h) > FY_END_CLOSE == CLOSES["2025-12"]
            assert "master:calendar" in d.required_evidence
            assert d.misstatement == pytest.approx(h["total"])
            assert {_recorded(h), FY_END_CLOSE, f"{h['total']:.2f}"} <= set(d.facts)
            doc, req = _request_of(w, h["reference"])
            assert not _authorised(h, req)
            if doc is not None:  # the request that fails to authorise it is part of the proof
                assert doc.doc_id in d.required_evidence and doc.doc_id in d.facts
        elif d.defect_type == "topside_unsupported":
            assert d.criteria == "UNSUPPORTED" and h["document_type"] == "TS" and _posted(h) == YEAR_END
            doc, figure = _support_of(w, h["reference"])
            assert doc.doc_id in d.required_evidence and 0 < figure < h["total"]
            assert d.misstatement == pytest.approx(h["total"] - figure)
            assert {doc.doc_id, f"{h['total']:.2f}", f"{figure:.2f}", f"{d.misstatement:.2f}"} <= set(d.facts)
        else:
            assert d.defect_type == "year_end_accrual_unsupported" and d.criteria == "UNSUPPORTED"
            assert h["document_type"] == "AC" and _posted(h) == YEAR_END
            doc, invoice = _statement_of(w, h["vendor_id"])
            assert doc.doc_id in d.required_evidence and invoice is None  # no later invoice for the accrual
            ended = re.search(r"on (\d{4}-\d\d-\d\d); no services", doc.body).group(1)
            assert ended < "2025-12-01" and ended in d.facts
            assert d.misstatement == pytest.approx(h["total"]) and f"{h['total']:.2f}" in d.facts


@pytest.mark.parametrize("seed", KEY_SEEDS)
def test_key_audit_decoys_are_cleared_by_their_evidence(seed):
    w = _world(seed)
    heads = _heads(seed)
    for d in w.decoys:
        h = heads[d.entry_id]
        if d.decoy_type == "year_end_revenue_shipped":
            doc, ship = _note_of(w, h["reference"])
            assert _in_window(h) and doc in d.clearing_evidence
            assert ship == _posted(h) <= YEAR_END  # shipped the day the goods issue and billing posted
            assert {doc, ship} <= set(d.facts)
        elif d.decoy_type == "post_closing_entry_approved":
            assert _after_close(h) and "master:calendar" in d.clearing_evidence
            doc, req = _request_of(w, h["reference"])
            assert _authorised(h, req) and req["date"] > FY_END_CLOSE
            assert doc.date <= req["date"] < _recorded(h)  # asked, then decided, then recorded
            assert doc.doc_id in d.clearing_evidence and {doc.doc_id, req["date"]} <= set(d.facts)
        elif d.decoy_type == "topside_supported":
            doc, figure = _support_of(w, h["reference"])
            assert figure == pytest.approx(h["total"]) and doc.doc_id in d.clearing_evidence
        else:
            assert d.decoy_type == "year_end_accrual_supported"
            doc, invoice = _statement_of(w, h["vendor_id"])
            assert invoice is not None and abs(h["total"] - invoice) <= ACCRUAL_TOLERANCE * invoice
            assert doc.doc_id in d.clearing_evidence and f"{invoice:.2f}" in d.facts


@pytest.mark.parametrize("seed", KEY_SEEDS)
def test_key_audit_nothing_outside_the_key_breaks_the_policy(seed):
    """Every in-scope entry outside the key passes the policy's tests: no entry recorded after its
    period's close, every window sale shipped in the year (its note on file), every top-side entry
    agrees with its support, every year-end accrual meets its January invoice within tolerance."""
    w = _world(seed)
    key = w.defect_ids | {d.entry_id for d in w.decoys}
    for eid, h in _heads(seed).items():
        if eid in key:
            continue
        assert not _after_close(h), eid
        if _in_window(h):
            doc, ship = _note_of(w, h["reference"])
            assert doc is not None and ship <= YEAR_END, eid
        if h["document_type"] == "TS":
            assert _support_of(w, h["reference"])[1] == pytest.approx(h["total"]), eid
        if h["document_type"] == "AC" and _posted(h) == YEAR_END:
            invoice = _statement_of(w, h["vendor_id"])[1]
            assert invoice is not None and abs(h["total"] - invoice) <= ACCRUAL_TOLERANCE * invoice, eid


@pytest.mark.parametrize("seed", KEY_SEEDS)
def test_key_audit_every_entry_recorded_after_the_close_is_in_the_key_or_explained(seed):
    """Every entry posted into FY2025 and recorded after the year-end close is in the key or explained
    by a document the agent can open. The only one outside the key is the system's closing entry,
    re-run after the postings into the closed year: the policy states the re-run rule and the close
    job's run log (in the pack) names the closing entry, runs it first at the close and then at the
    first full hour after each of those postings, naming each, and its last run is the closing entry's
    own entry time."""
    w = _world(seed)
    key = w.defect_ids | {d.entry_id for d in w.decoys}
    heads = _heads(seed)
    late = {eid: h for eid, h in heads.items() if _recorded(h) > FY_END_CLOSE and _posted(h) <= YEAR_END}
    outside = {eid: h for eid, h in late.items() if eid not in key}
    assert {h["document_type"] for h in outside.values()} <= {"YC"}, sorted(outside)
    policy = next(d for d in w.documents if d.title == POLICY_TITLE).body
    assert "runs it again at the first full hour after any posting into the closed year" in policy
    (log,) = [d for d in w.documents if d.title == CLOSE_LOG_TITLE]
    (yc,) = [h for h in heads.values() if h["document_type"] == "YC"]
    assert f"Closing entry {yc['reference']}, posted {_posted(yc)}" in log.body
    runs = re.findall(r"^Run (\d+)  (\d{4}-\d\d-\d\d \d\d:\d\d)  (.*)$", log.body, re.M)
    assert runs[0][1] == f"{FY_END_CLOSE} 18:00" and [int(n) for n, _t, _w in runs] == list(range(1, len(runs) + 1))
    assert runs[-1][1] == yc["entry_timestamp"].strftime("%Y-%m-%d %H:%M") and log.date == _recorded(yc)
    first = dt.datetime.fromisoformat(runs[0][1])
    named = {}
    for _n, at, what in runs[1:]:
        for eid, posted, recorded in re.findall(r"entry (\d+) \([A-Z]{2}-\d{7}, posted (\S+), recorded ([^)]+)\)", what):
            named[eid] = (posted, recorded, at)
    # every entry keyed after the first run is named, at the first full hour after it was recorded
    after_first = {eid for eid, h in heads.items() if h["document_type"] != "YC" and h["entry_timestamp"] >= first}
    assert set(named) == after_first, (seed, sorted(set(named) ^ after_first))
    for eid, (posted, recorded, at) in named.items():
        ts = heads[eid]["entry_timestamp"]
        assert posted == _posted(heads[eid]) and recorded == str(ts)
        assert at == (ts.replace(minute=0, second=0) + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")
    # the closing entry stands at its last run only when a posting came after the close
    assert (len(runs) > 1) == bool(after_first) and (yc["entry_id"] in outside) == bool(after_first)


@pytest.mark.parametrize("seed", KEY_SEEDS)
def test_key_audit_documents_are_dated_with_what_they_support(seed):
    """No support dated after the entry it supports was recorded; a delivery note is raised on or
    before the billing; statements and requests come after the year end."""
    w = _world(seed)
    heads = _heads(seed)
    by_ref = {h["reference"]: h for h in heads.values()}
    for d in w.documents:
        m = re.search(r"\((TS-\d+)\)$", d.title)
        if m:
            assert d.date <= _recorded(by_ref[m.group(1)]), d.doc_id
        if d.doc_type == "shipping_document":
            ref = re.search(r" - (\S+) ", d.title).group(1)
            assert d.date <= _posted(by_ref[ref]), d.doc_id
        if d.title.startswith("Post-closing adjustment request"):
            ref = re.search(r"Entry reference: (\S+)", d.body).group(1)
            assert FY_END_CLOSE < d.date < _recorded(by_ref[ref]), d.doc_id


def test_key_audit_sales_cutoff_moves_the_goods_issue_with_the_billing():
    """A planted sale keeps its chain: the goods issue it bills posts the same day, a minute before
    the billing (as the interface does), and no customer receipt for it is in the year (it was
    picked among December sales still unpaid at the year end)."""
    for seed in KEY_SEEDS:
        w = _world(seed)
        heads = _heads(seed)
        goods_issues = {(x["reference"], _posted(x), x["entry_timestamp"]) for x in heads.values()
                        if x["document_type"] == "SH"}
        receipts = " ".join(x["description"] for x in heads.values() if x["document_type"] == "CR")
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            if not _in_window(h):
                continue
            shipment = re.search(r"ref (SH-\d+)", h["description"]).group(1)  # the billing names its goods issue
            assert (shipment, _posted(h), h["entry_timestamp"] - dt.timedelta(seconds=60)) in goods_issues, (seed, rec.entry_id)
            assert h["reference"] not in receipts, (seed, rec.entry_id)


#: the documented rate of unplanted look-alikes the naive filter catches (the module docstring)
DOCUMENTED_PER_WORLD, DOCUMENTED_SHARE = 5.8, 0.35


def test_key_audit_lookalike_rate_is_the_documented_one():
    """Over seeds 0-49, the naive filter's hits outside the key are as the task docstring says."""
    import jeval_ray.tasks.je09 as je09

    hits = unplanted = 0
    for seed in range(50):
        w = _world(seed)
        key = w.defect_ids | {d.entry_id for d in w.decoys}
        for eid, h in _heads(seed).items():
            if _in_window(h) or (_posted(h)[:4] == "2025" and _recorded(h) > YEAR_END and h["document_type"] != "YC"):
                hits += 1
                unplanted += eid not in key
    assert unplanted / 50 == pytest.approx(DOCUMENTED_PER_WORLD, abs=0.06)
    assert unplanted / hits == pytest.approx(DOCUMENTED_SHARE, abs=0.005)
    assert f"{DOCUMENTED_PER_WORLD} unplanted look-alikes per world, {DOCUMENTED_SHARE:.0%}".replace("%", " %") in \
        " ".join(je09.__doc__.split())


def test_key_audit_planting_changes_only_what_each_defect_changes():
    """Against the books as simulated, planting changes only the key's entries (and a planted sale's
    own goods issue), and only the fields its kind changes: a sale moves its dates within December,
    a post-closing entry its entry date and time, a top-side entry or accrual nothing at all (its
    defect is in the documents)."""
    from jeval_ray.tasks import get_task, resolve_knobs
    from jeval_ray.tasks.je09 import plant
    from jeval_ray.world import WorldBuilder

    fields = ("doc_date", "post_date", "entry_date", "time_s", "preparer", "approver", "debit_account",
              "credit_account", "debit_cents", "credit_cents")
    allowed = {"revenue_before_shipment": {"doc_date", "post_date", "entry_date"},
               "year_end_revenue_shipped": {"doc_date", "post_date", "entry_date"},
               "post_closing_entry_unauthorised": {"entry_date", "time_s"},
               "post_closing_entry_approved": {"entry_date", "time_s"},
               "topside_unsupported": set(), "topside_supported": set(),
               "year_end_accrual_unsupported": set(), "year_end_accrual_supported": set()}
    spec = get_task("JE-9")
    for seed in range(8):
        base = WorldBuilder(spec, seed, resolve_knobs("JE-9", None))
        b = WorldBuilder(spec, seed, resolve_knobs("JE-9", None))
        plant(b)
        kinds = {int(i): t for i, t, *_ in b.defects} | {int(i): t for i, t, *_ in b.decoys}
        changed = {f: np.flatnonzero(b.e[f] != base.e[f]) for f in fields}
        changed["description"] = np.array([i for i in range(b.n) if b.e["description"][i] != base.e["description"][i]])
        sales = [i for i, t in kinds.items() if allowed[t] and "post_date" in allowed[t]]
        goods_issues = {int(base.books.docs.parent[b.e["books_doc"][i]]) for i in sales}
        late = [i for i, t in kinds.items() if t.startswith("post_closing")]
        assert set(late) <= set(changed["entry_date"].tolist()), seed  # every post-closing entry was moved
        for f, rows in changed.items():
            for i in rows.tolist():
                if int(b.e["books_doc"][i]) in goods_issues:  # the sale's goods issue moves with it
                    assert b.e["doc_code"][i] == "SH" and f in {"doc_date", "post_date", "entry_date"}, (seed, i, f)
                    continue
                assert i in kinds and f in allowed[kinds[i]], (seed, i, f, kinds.get(i))
                if f == "post_date":  # within December, never earlier than the books had it
                    assert base.e["post_date"][i] <= b.e["post_date"][i] <= np.datetime64(YEAR_END), (seed, i)
