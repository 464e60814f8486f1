"""JE-1 (L1): unbalanced entries.

Planted: entries whose credit side differs from the debit side by more than the rounding
tolerance stated in the journal-entry policy (keying errors). Decoys: differences within the
tolerance (currency rounding), which the policy allows. Required evidence: the entry's lines
(``get_entry``) and the policy document.
"""

from __future__ import annotations

import re

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-1",
    "L1",
    'Unbalanced entries',
    objective='Find journal entries whose debits and credits do not balance beyond the rounding tolerance set by the journal-entry policy.',
    defect='unbalanced entry (debits differ from credits beyond tolerance)',
    decoys='rounding differences within the tolerance',
    required_evidence="the entry's lines (get_entry) and the journal-entry policy",
    sources=('general_ledger', 'je_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', 'debits and credits of the entry differ by more than the rounding tolerance'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=False,
    available=True,
)

POLICY_TITLE = "Journal entry policy - balancing and rounding"


def plant(b) -> None:
    rng = b.rng
    tol_cents = int(rng.choice([100, 200, 500]))
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 4.2 Balancing. Every journal entry must balance: total debits must equal total credits. "
        f"Differences of up to USD {tol_cents / 100:.2f} per entry that arise from currency conversion rounding are "
        "tolerated and are cleared monthly to the rounding account by the GL team. Any larger difference is an "
        "error and must be corrected before period close.",
        "2024-12-15",
    )
    defects = b.pick(b.n_defects)
    for idx in defects:
        # keying errors: a few times the tolerance up to a transposed amount
        if rng.random() < 0.5:
            diff = int(tol_cents * rng.uniform(1.5, 20))
        else:
            diff = max(tol_cents * 2, int(b.e["debit_cents"][idx] * rng.uniform(0.01, 0.2)))
        sign = 1 if rng.random() < 0.5 else -1
        b.e["credit_cents"][idx] += sign * diff
        b.add_defect(idx, "unbalanced_entry", "UNBALANCED", ["entry", policy], diff)
    decoys = b.pick(b.n_decoys)
    near = b.knobs.near_miss
    for idx in decoys:
        lo = max(1, int(tol_cents * 0.05))
        hi = max(lo + 1, int(tol_cents * (0.3 + 0.69 * near)))
        diff = int(rng.integers(lo, hi + 1))
        b.e["credit_cents"][idx] += diff if rng.random() < 0.5 else -diff
        b.add_decoy(idx, "rounding_within_tolerance", ["entry", policy])


def _unbalanced(kit: Kit):
    rows = yield from kit.ledger(columns=["entry_id", "line_no", "debit", "credit"])
    ents = entries_of(rows)
    return {k: round(abs(e["total_debit"] - e["total_credit"]), 2) for k, e in ents.items()
            if abs(e["total_debit"] - e["total_credit"]) > 0.004}


def naive(kit: Kit):
    """Flags every entry that does not balance to the cent, without reading the policy."""
    diffs = yield from _unbalanced(kit)
    for eid, d in sorted(diffs.items()):
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "UNBALANCED", [], f"Entry {eid} does not balance: difference {d:.2f}.")
    yield from kit.submit(f"Flagged {len(diffs)} entries that do not balance.")


def careful(kit: Kit):
    """Reads the tolerance from the policy, verifies each unbalanced entry's lines, flags beyond tolerance."""
    doc_id = yield from kit.find_document("rounding tolerated", "balancing and rounding")
    tol = 0.0
    if doc_id:
        body = (yield from kit.open(doc_id)).get("body", "")
        m = re.search(r"up to USD ([\d,]+\.\d\d)", body)
        tol = float(m.group(1).replace(",", "")) if m else 0.0
    diffs = yield from _unbalanced(kit)
    ev = [doc_id] if doc_id else []
    flags = sorted((e for e, d in diffs.items() if d > tol + 1e-9), key=lambda e: -diffs[e])
    clears = sorted(e for e, d in diffs.items() if d <= tol + 1e-9)
    for eid in flags:
        if kit.calls_left <= 2:
            break
        entry = yield from kit.call("get_entry", entry_id=eid)
        d = round(abs(entry.get("total_debit", 0) - entry.get("total_credit", 0)), 2)
        yield from kit.flag(eid, "UNBALANCED", [eid, *ev],
                            f"Entry {eid}: debits {entry.get('total_debit')} vs credits {entry.get('total_credit')}, "
                            f"difference {d:.2f} exceeds the USD {tol:.2f} rounding tolerance in {doc_id}.", amount=d)
    for eid in clears:
        if kit.calls_left <= 3:
            break
        entry = yield from kit.call("get_entry", entry_id=eid)
        d = round(abs(entry.get("total_debit", 0) - entry.get("total_credit", 0)), 2)
        yield from kit.clear(eid, [eid, *ev], f"Entry {eid}: difference {d:.2f} is within the USD {tol:.2f} "
                                             f"rounding tolerance allowed by {doc_id}.")
    yield from kit.submit(f"Tolerance USD {tol:.2f}; flagged {len(flags)} unbalanced entries, {len(clears)} rounding differences within tolerance.")
