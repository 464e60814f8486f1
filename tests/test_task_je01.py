"""JE-1 (upload residuals in the rounding account): the key an auditor would reach and the extent of the naive rule (what every
task promises is tests/test_task_contract.py).

The checks read the visible world only (ledger lines, the policy, the upload files), independently
of the task module, so a planting bug cannot hide behind the same code in the test.
"""

from __future__ import annotations

import math
import re

from jeval_ray.agents import entries_of
from conftest import check_naive_flags_only_the_key

TASK = "JE-1"
SEEDS = range(5)


def residuals(world) -> dict[str, float]:
    """Entry id -> the residual (USD, unsigned) the upload tool posted to the rounding account."""
    rows = [r for r in world.ledger.to_pylist() if r["account"] == "7990" and r["source"] == "manual"]
    return {k: abs(v["total_debit"] - v["total_credit"]) for k, v in entries_of(rows).items()}


def suspense(world) -> dict[str, float]:
    """Entry id -> the residual (USD, unsigned) the upload tool posted to the suspense account (the
    clearing journals aside)."""
    rows = [r for r in world.ledger.to_pylist() if r["account"] == "2991" and r["source"] == "manual"
            and not r["description"].startswith("Suspense clearing")]
    return {k: abs(v["total_debit"] - v["total_credit"]) for k, v in entries_of(rows).items()}


def kind(record) -> str:
    return getattr(record, "defect_type", None) or record.decoy_type


def policy_terms(world) -> tuple[float, float]:
    """(the upload tool's tolerance, the rounding tolerance per square root of the rounded lines) stated by
    the policy."""
    body = next(d.body for d in world.documents if "balancing and rounding" in d.title)
    tol = float(re.search(r"differ by more than USD ([\d.]+)\.", body).group(1))
    per_root = float(re.search(r"half-cent roundings, USD ([\d.]+) x sqrt\(n\)", body).group(1))
    return tol, per_root


def upload_file(world, record) -> tuple[str, int, str]:
    """(basis, lines, body) of the upload file a key record needs."""
    evidence = record.required_evidence if hasattr(record, "required_evidence") else record.clearing_evidence
    doc = next(world.document(e) for e in evidence if world.document(e).doc_type == "upload_file")
    basis = re.search(r"Basis: ([a-z]+)\.", doc.body).group(1)
    return basis, int(re.search(r"Lines: (\d+)", doc.body).group(1)), f"{doc.title}\n{doc.body}"


def test_the_filter_catches_exactly_the_planted_entries_all_within_the_tools_tolerance(worlds):
    templates = set()
    for w in worlds.values():
        tol, _ = policy_terms(w)
        res, susp = residuals(w), suspense(w)
        assert set(res) | set(susp) == w.defect_ids | {d.entry_id for d in w.decoys} and not set(res) & set(susp)
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        refs = {r["entry_id"]: r["reference"] for r in w.ledger.to_pylist() if r["entry_id"] in res or r["entry_id"] in susp}
        templates |= {refs[e].split("-")[0] for e in refs}
        for v in res.values():
            assert 0.03 - 1e-9 <= v <= tol + 1e-9
        for v in susp.values():
            assert v > tol + 1e-9
        # every entry balances: the residual is posted, not left out
        ents = entries_of(w.ledger.to_pylist())
        assert all(abs(v["total_debit"] - v["total_credit"]) < 0.005 for v in ents.values())
    assert templates == {"AC", "TS"}, "defects and decoys are accruals and top-side entries alike"


def test_the_key_follows_from_the_policy_and_the_upload_files(worlds):
    kinds = set()
    for w in worlds.values():
        _, per_root = policy_terms(w)
        res = residuals(w)
        for d in w.decoys:
            if d.entry_id not in res:
                continue
            basis, n, _ = upload_file(w, d)
            assert basis == "allocation" and res[d.entry_id] <= per_root * math.sqrt(n) + 1e-9, \
                "a decoy's residual is allocation rounding within three standard deviations"
        for d in w.defects:
            assert d.criteria == "UNBALANCED"
            if d.entry_id not in res:
                continue
            basis, n, _ = upload_file(w, d)
            assert basis == "keyed" or res[d.entry_id] > per_root * math.sqrt(n) + 1e-9, \
                "a defect's residual is not allocation rounding within the tolerance"
            assert d.criteria == "UNBALANCED"
            kinds.add(d.defect_type)
    assert kinds == {"keyed_file_not_balanced", "difference_exceeds_rounding_limit"}


SUSPENSE_SEEDS = range(40000, 40030)


def _suspense_worlds():
    from jeval_ray.world import generate_world
    return [generate_world(TASK, s) for s in SUSPENSE_SEEDS]


def test_suspense_items_are_cleared_or_open_as_the_key_says():
    """Each defect and decoy kind appears over seeds; a suspense decoy's record names a clearing journal
    posted by year end to the account found, an open item's has no journal in the year, a wrongly cleared
    item's journal moves the residual to another account."""
    seen = set()
    for w in _suspense_worlds():
        led = w.ledger.to_pylist()
        by_ref: dict[str, list[dict]] = {}
        for r in led:
            by_ref.setdefault(r["reference"], []).append(r)
        susp = suspense(w)
        refs = {r["entry_id"]: r["reference"] for r in led if r["entry_id"] in susp}
        for rec in (*w.defects, *w.decoys):
            seen.add(kind(rec))
            if rec.entry_id not in susp:
                continue
            doc = next(d for d in w.documents if d.title == f"Suspense investigation {refs[rec.entry_id]}")
            m = re.search(r"journal (TS-\d+) with posting date (\S+); (debit|credit) account (\d+) ", doc.body)
            journal, when, found = m.group(1), m.group(2), m.group(4)
            lines = by_ref.get(journal, [])
            accounts = {r["account"] for r in lines} - {"2991"}
            k = kind(rec)
            if k == "suspense_open_at_year_end":
                assert not lines and when > "2025-12-31"
            else:
                assert lines and all(str(r["posting_date"]) <= "2025-12-31" for r in lines)
                assert (accounts == {found}) is (k == "suspense_cleared_as_investigated"), k
            assert k in ("suspense_open_at_year_end", "suspense_cleared_to_other_account",
                         "suspense_cleared_as_investigated")
    assert seen == {"keyed_file_not_balanced", "difference_exceeds_rounding_limit", "allocation_rounding_within_limit",
                    "suspense_open_at_year_end", "suspense_cleared_to_other_account",
                    "suspense_cleared_as_investigated"}


def _auc(pos: list[float], neg: list[float]) -> float:
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_the_listing_cannot_tell_suspense_defects_from_decoys():
    """Residual size and dates of the suspense uploads rank defects and decoys alike (rank AUC 0.35-0.65)."""
    size = {True: [], False: []}
    posted = {True: [], False: []}
    keyed = {True: [], False: []}
    for w in _suspense_worlds():
        susp = suspense(w)
        rows = {r["entry_id"]: r for r in w.ledger.to_pylist() if r["entry_id"] in susp}
        tol, _ = policy_terms(w)
        for eid, v in susp.items():
            bad = eid in w.defect_ids
            size[bad].append(v / tol)
            posted[bad].append(rows[eid]["posting_date"].toordinal())
            keyed[bad].append(rows[eid]["entry_timestamp"].timestamp())
    assert len(size[True]) >= 15 and len(size[False]) >= 15
    for name, x in (("residual", size), ("posting date", posted), ("entry time", keyed)):
        auc = _auc(x[True], x[False])
        assert 0.35 <= auc <= 0.65, (name, auc)


def test_decisive_facts_are_stated_in_the_needed_evidence(worlds):
    for w in worlds.values():
        res = residuals(w)
        for r in (*w.defects, *w.decoys):
            if r.entry_id not in res:
                continue
            basis, n, text = upload_file(w, r)
            doc_id = r.facts[0]
            assert doc_id.startswith("DOC-") and w.document(doc_id).doc_type == "upload_file"
            assert r.facts[1] == basis and f"Basis: {basis}." in text
            assert f"residual {r.facts[2]} posted to account 7990" in text
            if len(r.facts) > 3:
                assert float(r.facts[3]) == n


def test_naive_flags_nothing_but_the_key(worlds):
    check_naive_flags_only_the_key(TASK, worlds)
