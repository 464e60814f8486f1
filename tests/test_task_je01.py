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
        res = residuals(w)
        assert set(res) == w.defect_ids | {d.entry_id for d in w.decoys}
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        refs = {r["entry_id"]: r["reference"] for r in w.ledger.to_pylist() if r["entry_id"] in res}
        templates |= {refs[e].split("-")[0] for e in res}
        for v in res.values():
            assert 0.03 - 1e-9 <= v <= tol + 1e-9
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
            basis, n, _ = upload_file(w, d)
            assert basis == "allocation" and res[d.entry_id] <= per_root * math.sqrt(n) + 1e-9, \
                "a decoy's residual is allocation rounding within three standard deviations"
        for d in w.defects:
            basis, n, _ = upload_file(w, d)
            assert basis == "keyed" or res[d.entry_id] > per_root * math.sqrt(n) + 1e-9, \
                "a defect's residual is not allocation rounding within the tolerance"
            assert d.criteria == "UNBALANCED"
            kinds.add(d.defect_type)
    assert kinds == {"keyed_file_not_balanced", "difference_exceeds_rounding_limit"}


def test_decisive_facts_are_stated_in_the_needed_evidence(worlds):
    for w in worlds.values():
        for r in (*w.defects, *w.decoys):
            basis, n, text = upload_file(w, r)
            doc_id = r.facts[0]
            assert doc_id.startswith("DOC-") and w.document(doc_id).doc_type == "upload_file"
            assert r.facts[1] == basis and f"Basis: {basis}." in text
            assert f"residual {r.facts[2]} posted to account 7990" in text
            if len(r.facts) > 3:
                assert float(r.facts[3]) == n


def test_naive_flags_nothing_but_the_key(worlds):
    check_naive_flags_only_the_key(TASK, worlds)
