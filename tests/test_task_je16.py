"""JE-16 (mixed engagement with completeness): every criterion's exceptions obey their rule, decoys
are cleared by their evidence, the missing entry shows in the numbering and the roll-forward, the
base is clean, premature dispositions cost, and the agents discriminate."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jeval_ray.agents import entries_of
from jeval_ray.tasks import get_task
from jeval_ray.tasks.je16 import KINDS, _account_ok, _off_window, _rules, _user_ok
from jeval_ray.world import generate_world
from jeval_ray.builder._base import month_close_dates

TASK = "JE-16"
SEEDS = range(5)
LEAK = re.compile(r"decoy|defect|planted|red flag|exception", re.I)
CLOSES = dict(month_close_dates())


def entries(world) -> dict[str, dict]:
    rows = [{**r, "posting_date": str(r["posting_date"]), "entry_timestamp": r["entry_timestamp"].isoformat()}
            for r in world.ledger.to_pylist()]
    return entries_of(rows)


def master(world, name, key) -> dict[str, dict]:
    return {r[key]: r for r in world.master[name].to_pylist()}


def holidays(world) -> set[str]:
    return {r["date"] for r in world.master["calendar"].to_pylist() if r["kind"] == "holiday"}


def rule_hits(world) -> dict[str, list[str]]:
    return _rules(entries(world), master(world, "users", "user_id"), master(world, "accounts", "account"), holidays(world),
                  CLOSES)


def memo_covers(world, doc_id: str, h: dict) -> bool:
    """Whether an out-of-hours work authorisation names the entry's preparer, day and time."""
    body = world.document(doc_id).body
    day, a, b, c, d = re.search(r"on \w+ (\d{4}-\d\d-\d\d), between (\d\d):(\d\d) and (\d\d):(\d\d)", body).groups()
    users = {u.strip() for u in re.search(r"Authorised users: ([A-Z_, ]+)", body).group(1).split(",")}
    ts = h["entry_timestamp"]
    return ts[:10] == day and h["preparer"] in users and f"{a}:{b}" <= ts[11:16] < f"{c}:{d}"


def approval_row(world, doc_id: str, ref: str) -> dict | None:
    for line in world.document(doc_id).body.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 5 and cells[0] == ref:
            return {"amount": float(cells[1].replace(",", "")), "preparer": cells[2], "signer": cells[3], "date": cells[4]}
    return None


def rounding_report(world, doc_id: str) -> dict[str, float]:
    """Upload reference -> difference (debits - credits) on an interface rounding report."""
    out = {}
    for line in world.document(doc_id).body.splitlines():
        m = re.fullmatch(r"(\S+) \| ([+-][\d,]+\.\d\d)", line.strip())
        if m:
            out[m.group(1)] = float(m.group(2).replace(",", ""))
    return out


def extension(world, doc_id: str) -> tuple[str, str, str, str]:
    """(period, original close, new close, issued) of a close calendar change."""
    body = world.document(doc_id).body
    p, old, new = re.search(r"close of period (\S+) is extended from (\S+) to (\S+)", body).groups()
    return p, old, new, re.search(r"Date: (\S+)", body).group(1)


@pytest.fixture(scope="module")
def big():
    """Enough exceptions and decoys that every kind and variant appears."""
    return generate_world(TASK, 1, {"n_entries": 3000, "n_defects": 30, "n_decoys": 30, "near_miss": 1.0})


def test_spec_scores_premature_dispositions():
    spec = get_task(TASK)
    assert spec.available and spec.tier == "L4" and spec.step_budget == 120 and spec.asks_amount
    assert spec.premature_penalty == pytest.approx(0.05)
    assert set(KINDS) | {"COMPLETENESS_GAP"} <= set(spec.criteria_codes)


def _check_defects(w) -> set[str]:
    ents = entries(w)
    users, chart = master(w, "users", "user_id"), master(w, "accounts", "account")
    hits = rule_hits(w)
    kinds = set()
    for d in w.defects:
        kinds.add(d.defect_type)
        if d.criteria == "COMPLETENESS_GAP":
            assert d.entry_id in w.hidden_entries and d.required_evidence == ("master:balances",)
            continue
        h = ents[d.entry_id]
        assert d.entry_id in hits[d.criteria], d
        # exactly one rule fires on a planted entry, so the criteria code is unambiguous
        assert [k for k in KINDS if d.entry_id in hits[k]] == [d.criteria], d
        if d.criteria == "UNBALANCED":
            diff = h["total_debit"] - h["total_credit"]
            reported = rounding_report(w, d.required_evidence[1]).get(h["reference"])
            assert reported is None or abs(reported - diff) > 0.005, d  # not on the report as it stands
            assert d.misstatement == pytest.approx(abs(diff), abs=0.01)
        else:
            assert d.misstatement == pytest.approx(h["total_debit"])
        if d.criteria == "SELF_APPROVAL":
            assert h["source"] == "manual" and users[h["preparer"]]["role"] != "System"
            log = d.required_evidence[0]
            row = approval_row(w, log, h["reference"])
            assert row is None or row["date"] > h["posting_date"] or \
                users[row["signer"]]["approval_limit"] < h["total_debit"], d
        if d.criteria == "INVALID_ACCOUNT":
            assert not all(_account_ok(chart.get(a), h["posting_date"])[0] for a in h["accounts"])
            # back-dated, not rejected: the account existed when the entry was keyed
            assert all(chart[a]["opened"] <= h["entry_timestamp"][:10] for a in h["accounts"])
        if d.criteria == "UNAUTHORISED_USER":
            assert not _user_ok(users.get(h["preparer"]), h["posting_date"])[0]
        if d.criteria == "OFF_HOURS":
            memos = [x.doc_id for x in w.documents if x.title.startswith("Out-of-hours work authorisation")]
            assert not any(memo_covers(w, m, h) for m in memos)
        if d.criteria == "CUTOFF":
            rec = h["entry_timestamp"][:10]
            assert rec > CLOSES[h["posting_date"][:7]]
            exts = [extension(w, x.doc_id) for x in w.documents if x.title.startswith("Close calendar change")]
            assert all(rec > new for p, _o, new, _i in exts if p == h["posting_date"][:7]), d
    return kinds


def test_defects_satisfy_their_rules(worlds, big):
    for w in worlds.values():
        _check_defects(w)
        assert sum(d.criteria == "COMPLETENESS_GAP" for d in w.defects) == 1
    kinds = _check_defects(big)
    assert {"off_hours_unauthorised", "off_hours_unlisted_user", "off_hours_outside_hours", "posting_to_not_yet_open_account",
            "posted_after_termination", "self_approved_not_logged", "self_approved_signed_after_posting",
            "entry_after_close_no_extension", "entry_after_close_after_extension"} <= kinds


def _check_decoys(w) -> None:
    ents = entries(w)
    users, chart = master(w, "users", "user_id"), master(w, "accounts", "account")
    hits = rule_hits(w)
    for d in w.decoys:
        h = ents[d.entry_id]
        fired = [k for k in KINDS if d.entry_id in hits[k]]
        assert len(fired) == 1, d  # looks like exactly one kind of exception
        if d.decoy_type == "interface_rounding_reported":
            tol = float(re.search(r"up to USD ([\d,.]+\d)", w.document(d.clearing_evidence[2]).body).group(1).replace(",", ""))
            diff = h["total_debit"] - h["total_credit"]
            assert 0 < abs(diff) <= tol and h["preparer"] == "SYS_INTERFACE"
            assert rounding_report(w, d.clearing_evidence[1])[h["reference"]] == pytest.approx(diff, abs=0.005)
        elif d.decoy_type == "signed_off_on_outage_log":
            row = approval_row(w, d.clearing_evidence[0], h["reference"])
            assert h["source"] == "manual" and row["preparer"] == h["preparer"] != row["signer"]
            assert row["date"] <= h["posting_date"] and users[row["signer"]]["approval_limit"] >= h["total_debit"]
            assert row["amount"] == pytest.approx(h["total_debit"])
        elif d.decoy_type == "account_opened_before_posting":
            assert all(_account_ok(chart.get(a), h["posting_date"])[0] for a in h["accounts"])
        elif d.decoy_type == "posted_before_termination":
            assert _user_ok(users[h["preparer"]], h["posting_date"])[0] and users[h["preparer"]]["termination_date"]
        elif d.decoy_type == "authorised_out_of_hours_work":
            assert _off_window(h["entry_timestamp"], holidays(w)) and memo_covers(w, d.clearing_evidence[0], h)
            body = w.document(d.clearing_evidence[0]).body
            # a prior authorisation whose purpose fits the entry (issue 15: a memo for another purpose clears nothing)
            assert re.search(r"Date: (\S+)", body).group(1) < h["entry_timestamp"][:10]
            assert f"accruals of period {h['posting_date'][:7]}" in body
        else:
            assert d.decoy_type == "recorded_within_close_extension"
            rec = h["entry_timestamp"][:10]
            period, old, new, issued = extension(w, d.clearing_evidence[2])
            assert period == h["posting_date"][:7] and old == CLOSES[period] < rec <= new and issued <= old
            assert np.is_busday(np.datetime64(rec))


def test_decoys_are_cleared_by_their_evidence(worlds, big):
    for w in [*worlds.values(), big]:
        _check_decoys(w)


def test_missing_entry_shows_in_numbering_and_roll_forward(worlds):
    for w in worlds.values():
        gap = next(d for d in w.defects if d.criteria == "COMPLETENESS_GAP")
        ids = sorted(int(x) for x in w.entry_ids)
        missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
        assert missing == [int(gap.entry_id)]
        bal = w.master["balances"].to_pylist()
        assert len({r["account"] for r in bal}) == len(bal)  # one row per account
        moved: dict[str, float] = {}
        for r in w.ledger.to_pylist():
            moved[r["account"]] = moved.get(r["account"], 0.0) + r["debit"] - r["credit"]
        diffs = {r["account"]: round(r["closing_balance"] - r["opening_balance"] - moved.get(r["account"], 0.0), 2) for r in bal}
        off = {a: d for a, d in diffs.items() if abs(d) > 0.005}
        assert len(off) == 2 and sorted(abs(x) for x in off.values()) == [gap.misstatement] * 2
        assert gap.facts == (gap.entry_id, f"{gap.misstatement:.2f}", *sorted(off, key=lambda a: -off[a]))


def test_base_population_does_not_trip_the_rules(worlds):
    for w in worlds.values():
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        # the year-end closing entry closes every expense account, the sub-accounts opened in the year
        # included (on 2025-12-31, when they are all open): the one unplanted hit of INVALID_ACCOUNT's rule
        closing = {r["entry_id"] for r in w.ledger.select(["entry_id", "document_type"]).to_pylist()
                   if r["document_type"] == "YC"}
        for crit, ids in rule_hits(w).items():
            if crit == "INVALID_ACCOUNT":
                ids = set(ids) - closing
            assert set(ids) <= planted, (crit, sorted(set(ids) - planted))


def test_no_hidden_labels_in_visible_text(worlds):
    for w in worlds.values():
        for d in w.documents:
            assert not LEAK.search(d.title + d.body), d.doc_id
        assert not any(LEAK.search(str(x)) for x in w.ledger.column("description").to_pylist())


def test_decisive_facts_are_stated_in_the_evidence(worlds):
    """Every fact of the key is a figure, date or id the entry's evidence (or the entry) shows."""
    for w in worlds.values():
        ents = entries(w)
        for rec in (*w.defects, *w.decoys):
            if rec.entry_id in w.hidden_entries:
                continue  # the missing entry's facts are the roll-forward's (test_missing_entry_shows_...)
            ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
            text = " ".join(w.document(x).body for x in ev if x.startswith("DOC-"))
            text += " " + " ".join(str(w.master[x.split(":")[1]].to_pylist()) for x in ev if x.startswith("master:"))
            text += " " + " ".join(ev)
            if rec.entry_id in ents:
                h = ents[rec.entry_id]
                text += (f" {h['total_debit']:.2f} {h['total_credit']:.2f} {abs(h['total_debit'] - h['total_credit']):.2f} "
                         f"{h['posting_date']} {h['entry_timestamp']} {h['preparer']} {' '.join(h['accounts'])}")
            else:
                text += f" {rec.entry_id}"
            for f in rec.facts:
                if re.fullmatch(r"-?[\d.]+", f) and "." in f:
                    assert any(abs(float(x.replace(",", "")) - float(f)) < 0.005 for x in re.findall(r"\d[\d,]*\.\d+", text)) \
                        or f"{float(f):.2f}" in text or str(float(f)) in text, (rec, f)
                elif f != "does not exist":  # the conclusion the chart's silence supports
                    assert f in text, (rec, f)


def test_listing_cannot_tell_decoys_from_defects_per_criterion():
    """Within each criterion, the listing fields the rule reads come from one distribution for
    defects and decoys: over many worlds the imbalance, the time of day and the recording lag overlap
    (rank AUC near 0.5; the old tolerance split gave 1.0 for the imbalance)."""
    def auc(a: list[float], b: list[float]) -> float:
        return sum((x > y) + 0.5 * (x == y) for x in a for y in b) / (len(a) * len(b))

    feats: dict[str, tuple[list, list]] = {"imbalance": ([], []), "hour": ([], []), "lag": ([], [])}
    for s in range(300, 330):
        w = generate_world(TASK, s, {"n_defects": 19, "n_decoys": 18})  # three of each kind a world
        ents = entries(w)
        for rec, k in [(d, 0) for d in w.defects] + [(d, 1) for d in w.decoys]:
            h = ents.get(rec.entry_id)
            if h is None:
                continue
            crit = rec.criteria if k == 0 else next(c for c in KINDS if rec.entry_id in rule_hits_cache(w)[c])
            if crit == "UNBALANCED":
                feats["imbalance"][k].append(np.log10(abs(h["total_debit"] - h["total_credit"])))
            elif crit == "OFF_HOURS":
                feats["hour"][k].append(int(h["entry_timestamp"][11:13]))
            elif crit == "CUTOFF":
                feats["lag"][k].append((np.datetime64(h["entry_timestamp"][:10]) - np.datetime64(h["posting_date"])).astype(int))
    for name, (dfx, dcx) in feats.items():
        assert len(dfx) >= 60 and len(dcx) >= 60, name
        assert 0.35 <= auc(dfx, dcx) <= 0.65, (name, auc(dfx, dcx))


_HITS: dict = {}


def rule_hits_cache(w):
    key = (w.task_id, w.seed)
    if key not in _HITS:
        _HITS[key] = rule_hits(w)
    return _HITS[key]


@pytest.fixture(scope="module")
def runs():
    from jeval_ray.episode import play

    return {a: [play(TASK, a, s) for s in SEEDS] for a in ("random", "naive", "careful")}


def test_careful_reads_the_evidence_and_states_the_facts(runs):
    for o in runs["careful"]:
        s = o.score
        assert s.outcome >= 0.95 and s.rationale >= 0.95 and s.process >= 0.95, (o.seed, s)
        assert s.verification.premature_disposition == 0


def test_naive_flags_every_rule_hit(runs):
    for o in runs["naive"]:
        v = o.score.verification
        assert v.recall >= 0.95 and v.fp >= len(generate_world(TASK, o.seed).decoys), (o.seed, v)
    mean = {a: sum(o.score.score for o in rs) / len(rs) for a, rs in runs.items()}
    assert mean["random"] < mean["naive"] < mean["careful"] - 0.15, mean
