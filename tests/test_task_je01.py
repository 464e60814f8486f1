"""JE-1 (unbalanced entries): the key an auditor would reach, surface parity, and the built-in agents.

The checks read the visible world only (ledger lines, the policy, the upload files), independently
of the task module, so a planting bug cannot hide behind the same code in the test.
"""

from __future__ import annotations

import re
import statistics

import pytest

from jeval_ray.agents import entries_of
from jeval_ray.episode import play
from jeval_ray.world import generate_world

TASK = "JE-1"
SEEDS = range(5)
PARITY_SEEDS = range(100, 140)


def unbalanced(world) -> dict[str, dict]:
    ents = entries_of(world.ledger.to_pylist())
    return {k: v for k, v in ents.items() if abs(v["total_debit"] - v["total_credit"]) > 0.004}


def policy_terms(world) -> tuple[float, float]:
    """(the upload tool's tolerance, the rounding limit per rounded line) stated by the policy."""
    body = next(d.body for d in world.documents if "balancing and rounding" in d.title)
    tol = float(re.search(r"differ by more than USD ([\d.]+)\.", body).group(1))
    per_line = float(re.search(r"at most USD ([\d.]+) \(half a cent\) per rounded line", body).group(1))
    return tol, per_line


def upload_file(world, record) -> tuple[str, int, str]:
    """(basis, lines, body) of the upload file a key record needs."""
    evidence = record.required_evidence if hasattr(record, "required_evidence") else record.clearing_evidence
    doc = next(world.document(e) for e in evidence if world.document(e).doc_type == "upload_file")
    basis = re.search(r"Basis: ([a-z]+)\.", doc.body).group(1)
    return basis, int(re.search(r"Lines: (\d+)", doc.body).group(1)), f"{doc.title}\n{doc.body}"


def test_the_filter_catches_exactly_the_planted_entries_all_within_the_tools_tolerance(worlds):
    for w in worlds.values():
        tol, _ = policy_terms(w)
        ents = unbalanced(w)
        assert set(ents) == w.defect_ids | {d.entry_id for d in w.decoys}
        assert 3 <= len(w.defects) <= 8 and len(w.decoys) == len(w.defects)
        for v in ents.values():
            assert 0.03 - 1e-9 <= abs(v["total_debit"] - v["total_credit"]) <= tol + 1e-9


def test_the_key_follows_from_the_policy_and_the_upload_files(worlds):
    kinds = set()
    for w in worlds.values():
        _, per_line = policy_terms(w)
        ents = unbalanced(w)
        for d in w.decoys:
            basis, n, _ = upload_file(w, d)
            diff = abs(ents[d.entry_id]["total_debit"] - ents[d.entry_id]["total_credit"])
            assert basis == "allocation" and diff <= n * per_line + 1e-9, "a decoy's difference is allocation rounding"
        for d in w.defects:
            basis, n, _ = upload_file(w, d)
            diff = abs(ents[d.entry_id]["total_debit"] - ents[d.entry_id]["total_credit"])
            assert basis == "keyed" or diff > n * per_line + 1e-9, "a defect's difference cannot be allocation rounding"
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
            assert f"difference {r.facts[2]}" in text
            if len(r.facts) > 3:
                assert float(r.facts[3]) == n


def test_decoys_and_defects_share_one_surface():
    """Same pool of journals, same difference distribution (relative to the tolerance), same text."""
    stats = {0: [], 1: []}
    templates = {0: set(), 1: set()}
    for s in PARITY_SEEDS:
        w = generate_world(TASK, s)
        tol, _ = policy_terms(w)
        ents = unbalanced(w)
        for label, recs in ((1, w.defects), (0, w.decoys)):
            for r in recs:
                v = ents[r.entry_id]
                stats[label].append(abs(v["total_debit"] - v["total_credit"]) / tol)
                templates[label].add(v["reference"].split("-")[0])
    assert templates[0] == templates[1] == {"AC", "TS"}
    # one draw for both (about 230 of each over these seeds: a standard error near 0.02 on the mean)
    assert abs(statistics.fmean(stats[0]) - statistics.fmean(stats[1])) < 0.06
    assert abs(statistics.median(stats[0]) - statistics.median(stats[1])) < 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_careful_reads_the_files_and_naive_flags_every_difference(seed):
    careful, naive = play(TASK, "careful", seed), play(TASK, "naive", seed)
    assert careful.score.outcome == 1.0 and careful.score.rationale >= 0.95 and careful.score.process >= 0.95
    assert naive.score.outcome == pytest.approx(0.5)
    assert naive.score.score < careful.score.score - 0.15
