"""JE-1 (L1): unbalanced entries.

The ERP posts only balanced documents keyed in it. Month-end accruals and year-end top-side
adjustments are prepared in spreadsheets (the expense allocated across cost centres and projects)
and reach the ledger through the GL upload tool, which posts each upload file as one entry (each
account's lines summarised on one ledger line) and accepts a file whose debit and credit totals
differ by up to a tolerance (USD 0.25, 0.50 or 1.00, drawn per seed and stated in the
journal-entry policy). So every unbalanced entry is an upload of an accrual (``AC``) or a top-side
adjustment (``TS``), every difference is within the tool's tolerance and sits on the allocated
(debit) side, and the size of a difference does not tell an error from a rounding.

What does is the upload file (one document per unbalanced entry, titled with the entry's
reference, dated the day it was uploaded, naming the entry, its accounts and its posted totals).
The policy accepts one cause only: allocation rounding. A file that allocates a balanced amount
by percentage rounds each allocated line to the cent, which can move the total by at most half a
cent (USD 0.005) per rounded line; a file whose lines were keyed as whole-cent amounts has no
rounding at all.

Planted, all drawn from one pool (the year's accruals and top-side adjustments; the same
difference, timing, amount and text distributions) and made a defect or a decoy at random. Only
the debit total of the entry changes (the accrued liability is what the file states; an
accrual's automatic reversal reverses that liability and is left as the books posted it):

* Decoys (``allocation_rounding_within_limit``): an allocation of the credited amount over
  enough lines that rounding reaches the difference. Decisive facts: the upload file, its
  basis (allocation), the difference and the number of rounded lines.
* Defects ``keyed_file_not_balanced``: a file keyed line by line in whole cents, so nothing was
  rounded and the difference is a keying error. Decisive facts: the file, its basis (keyed),
  the difference.
* Defects ``difference_exceeds_rounding_limit``: an allocation over so few lines that rounding
  cannot explain the difference (more than USD 0.005 a line). Decisive facts: the file, its
  basis, the difference and the number of lines.

Red-flag rule (debits differ from credits): the books post only balanced entries, so the rule
catches no unplanted entry (0 of the 25,432 unplanted listed entries of seeds 0-49 at default knobs;
``tests/test_key_audit_je01.py`` measures it). Required evidence (and clearing evidence): the
policy and the entry's upload file. ``near_miss`` moves decoys' differences closer to their
files' rounding limit (and the line-limit defects' closer from above).
"""

from __future__ import annotations

import math
import re

import numpy as np

from jeval_ray.protocol.kit import Kit, entries_of
from jeval_ray.builder.spec import key, spec

SPEC = spec(
    "JE-1",
    "L1",
    'Unbalanced entries',
    objective='Find journal entries whose debits and credits do not balance, other than the differences the journal-entry policy accepts.',
    defect='unbalanced upload whose difference is not allocation rounding (a file keyed in whole cents, or more than half a cent per rounded line)',
    decoys='uploads of allocated accruals whose difference is rounding within the policy limit',
    required_evidence="the journal-entry policy and the entry's upload file",
    sources=('general_ledger', 'je_policy', 'upload_files'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNBALANCED', 'debits and credits of the entry differ by an amount the journal-entry policy does not accept'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=False,
    available=True,
)

_STD = "AS 2401.58-.61; ISA 240.32(a)"
KEY_RATIONALE = (
    key("defect", "keyed_file_not_balanced",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: amounts keyed per line in whole cents (no allocation, so no rounding); the file's own debit and "
              "credit totals differ by the posted difference",
        conclusion="The upload was out of balance when keyed; the policy accepts only rounding, and a file with no "
                   "rounded line has none. Exception: the entry misstates the debited account by the difference.",
        standard=_STD),
    key("defect", "difference_exceeds_rounding_limit",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: allocation of the credited amount over N rounded lines; the difference is larger than N x USD "
              "0.005",
        conclusion="Rounding of N lines cannot reach the difference, so a line was changed after the allocation. "
                   "Exception: the difference is an error the policy does not accept.",
        standard=_STD),
    key("decoy", "allocation_rounding_within_limit",
        evidence="the entry's upload file, read against the journal-entry policy (section 4.3)",
        facts="basis: allocation of the credited amount (the file's total before rounding equals the credit) over N "
              "lines, each rounded to the cent; the difference is at most N x USD 0.005 and within the tool's "
              "tolerance",
        conclusion="The difference is the allocation rounding the policy accepts; no exception.",
        standard=_STD),
)

POLICY_TITLE = "Journal entry policy - balancing and rounding"
UPLOAD_TITLE = "GL upload file"
#: the most rounding one allocated line can add (USD)
PER_LINE = 0.005
#: spreadsheet journals: month-end accruals and top-side adjustments (one debited expense, Cr 2100)
UPLOAD_CODES = ("AC", "TS")
#: what an allocation of the debited account is spread over (utilities by floor space, fees by project hours …)
BASES = {"6000": "headcount by cost centre", "6200": "floor space by cost centre", "6400": "hours by project",
         "6700": "budget share by cost centre and campaign"}


def plant(b) -> None:
    """Add the policy; turn a pool of accruals and top-side adjustments into uploads whose debit
    total differs from the credit within the tool's tolerance; make each a decoy (allocation
    rounding) or a defect (not rounding) at random."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    tol_cents = int(rng.choice([25, 50, 100]))
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 4.2 Balancing. Every journal entry must balance: total debits must equal total credits. Entries "
        "keyed in the ERP cannot be posted unbalanced. Month-end accruals and top-side adjustments prepared in "
        "spreadsheets are posted through the GL upload tool, which posts each upload file as one entry (each "
        "account's lines summarised on one ledger line) and rejects a file whose debit and credit totals differ by "
        f"more than USD {tol_cents / 100:.2f}.\n"
        "Section 4.3 Rounding. The only difference this policy accepts is allocation rounding: a file that allocates "
        "a balanced amount by percentage rounds each allocated line to the cent and may therefore differ by at most "
        f"USD {PER_LINE:.3f} (half a cent) per rounded line. Any other difference, including any difference on a file "
        "whose lines were keyed as amounts (nothing rounded), is an error in the file and must be corrected before "
        "period close.",
        "2024-12-15",
    )
    k = b.n_defects + b.n_decoys
    chosen = b.pick(k, where=e["manual"] & np.isin(e["doc_code"], UPLOAD_CODES), what="accruals and top-side adjustments")
    roles = np.array([1] * b.n_defects + [0] * b.n_decoys)[rng.permutation(k)]
    for idx, is_defect in zip(chosen, roles):
        idx = int(idx)
        # the difference: one distribution for every upload, within the tool's tolerance and scaled to
        # the journal's size (allocated lines average USD 20 or more, so a small journal has few lines)
        cap = min(tol_cents, max(3, int(e["credit_cents"][idx]) // 4000))
        d = int(rng.integers(3, cap + 1))
        sign = 1 if rng.random() < 0.5 else -1
        e["debit_cents"][idx] = e["credit_cents"][idx] + sign * d
        kind = "decoy" if not is_defect else ("keyed" if rng.random() < 0.5 else "few_lines")
        _upload(b, idx, kind, d, near, policy)


def _upload(b, idx: int, kind: str, d: int, near: float, policy: int) -> None:
    """Write the entry's upload file and record the entry as a decoy or a defect."""
    rng = b.rng
    e = b.e
    debit, credit = int(e["debit_cents"][idx]), int(e["credit_cents"][idx])
    ref = str(e["reference"][idx])
    when = b.date_str(e["entry_date"][idx])
    dr, cr = str(e["debit_account"][idx]), str(e["credit_account"][idx])
    head = (f"Upload file for journal {ref} (entry {{E:{idx}}}), prepared by {e['preparer'][idx]} and uploaded on "
            f"{when} for posting on {b.date_str(e['post_date'][idx])}. Purpose: {e['description'][idx]}.\n"
            f"Credit: account {cr}, one line of {credit / 100:,.2f}.\n")
    posted = f"\nPosted in the ledger: debit {debit / 100:,.2f}, credit {credit / 100:,.2f}; difference {d / 100:.2f}."
    if kind == "keyed":
        n = int(rng.integers(4, 60))
        body = (head + f"Debit: account {dr}, {n} lines keyed as amounts per cost centre (no allocation, nothing "
                f"rounded). Basis: keyed. Lines: {n}.\nFile totals: debit {debit / 100:,.2f}, credit {credit / 100:,.2f}."
                + posted)
        doc = b.add_document("upload_file", f"{UPLOAD_TITLE} {ref}", body, when)
        b.add_defect(idx, "keyed_file_not_balanced", "UNBALANCED", [policy, doc], misstatement_cents=d,
                     facts=[f"{{D:{doc}}}", "keyed", d / 100])
        return
    if kind == "decoy":
        # enough lines for the rounding to reach the difference; near_miss brings the limit down to it
        slack = rng.uniform(1.05, 1.1 + 2.9 * (1 - near))
        n = max(2, math.ceil(d / (PER_LINE * 100) * slack))
    else:
        # too few lines: at most half a cent each cannot make the difference
        share = rng.uniform(0.15 + 0.6 * near, 0.2 + 0.7 * near)
        n = max(2, min(int(d / (PER_LINE * 100) * share), math.ceil(d / (PER_LINE * 100)) - 1))
    basis = BASES.get(dr, "headcount by cost centre")
    body = (head + f"Debit: account {dr}, the credited {credit / 100:,.2f} allocated by {basis}, each allocated line "
            f"rounded to the cent. Basis: allocation. Lines: {n}.\n"
            f"File totals: amount allocated {credit / 100:,.2f}; sum of the rounded lines {debit / 100:,.2f}." + posted)
    doc = b.add_document("upload_file", f"{UPLOAD_TITLE} {ref}", body, when)
    facts = [f"{{D:{doc}}}", "allocation", d / 100, str(n)]
    if kind == "decoy":
        b.add_decoy(idx, "allocation_rounding_within_limit", [policy, doc], facts=facts)
    else:
        b.add_defect(idx, "difference_exceeds_rounding_limit", "UNBALANCED", [policy, doc], misstatement_cents=d,
                     facts=facts)


# ----------------------------------------------------------------- strategies
def _unbalanced(kit: Kit):
    rows = yield from kit.ledger(columns=["entry_id", "line_no", "debit", "credit", "reference"])
    ents = entries_of(rows)
    return {k: e for k, e in ents.items() if abs(e["total_debit"] - e["total_credit"]) > 0.004}


def naive(kit: Kit):
    """Flags every entry that does not balance to the cent, without reading the policy or the files."""
    ents = yield from _unbalanced(kit)
    for eid in sorted(ents):
        if kit.calls_left <= 1:
            break
        d = abs(ents[eid]["total_debit"] - ents[eid]["total_credit"])
        yield from kit.flag(eid, "UNBALANCED", [], f"Entry {eid} does not balance: difference {d:.2f}.")
    yield from kit.submit(f"Flagged {len(ents)} entries that do not balance.")


def _read_upload(body: str) -> tuple[str, int]:
    """(basis, number of lines) from an upload file's text."""
    basis = re.search(r"Basis: ([a-z]+)\.", body)
    lines = re.search(r"Lines: (\d+)", body)
    return (basis.group(1) if basis else ""), (int(lines.group(1)) if lines else 0)


def careful(kit: Kit):
    """Reads the policy (tolerance, half a cent per rounded line), then each unbalanced entry's
    upload file: clears allocation rounding within the limit, flags every other difference."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "balancing and rounding" in d["title"].lower()), None)
    per_line, tol = PER_LINE, 0.0
    if policy:
        body = (yield from kit.open(policy)).get("body", "")
        m = re.search(r"differ by more than USD ([\d,]+\.\d\d)", body)
        tol = float(m.group(1).replace(",", "")) if m else 0.0
        m = re.search(r"at most USD (\d+\.\d+) \(half a cent\) per rounded line", body)
        per_line = float(m.group(1)) if m else PER_LINE
    files = {d["title"][len(UPLOAD_TITLE) + 1:]: d["doc_id"] for d in docs if d["title"].startswith(UPLOAD_TITLE)}
    ents = yield from _unbalanced(kit)
    flags = clears = 0
    for eid in sorted(ents):
        if kit.calls_left <= 2:
            break
        v = ents[eid]
        d = round(abs(v["total_debit"] - v["total_credit"]), 2)
        doc = files.get(v.get("reference") or "")
        if doc is None:
            flags += 1
            yield from kit.flag(eid, "UNBALANCED", [policy] if policy else [],
                                f"Entry {eid} does not balance (difference {d:.2f}) and no upload file supports it.")
            continue
        basis, n = _read_upload((yield from kit.open(doc)).get("body", ""))
        ev = [doc] + ([policy] if policy else [])
        limit = round(n * per_line, 3)
        if basis != "allocation":
            flags += 1
            yield from kit.flag(eid, "UNBALANCED", ev,
                                f"Entry {eid}: upload file {doc} is keyed (basis: keyed, amounts per line), so nothing "
                                f"was rounded; the difference of {d:.2f} is a keying error, not rounding ({policy}).")
        elif d > limit + 1e-9 or (tol and d > tol + 1e-9):
            flags += 1
            yield from kit.flag(eid, "UNBALANCED", ev,
                                f"Entry {eid}: upload file {doc} is an allocation over {n} rounded lines, so rounding can "
                                f"reach at most {limit:.3f}; the difference of {d:.2f} is larger and is an error "
                                f"under {policy}.")
        else:
            clears += 1
            yield from kit.clear(eid, ev,
                                 f"Entry {eid}: upload file {doc} is an allocation of the credited amount over {n} lines, each "
                                 f"rounded to the cent; the difference of {d:.2f} is within the {limit:.3f} rounding "
                                 f"limit (half a cent a line) and the USD {tol:.2f} tolerance of {policy}.")
    yield from kit.submit(f"Reviewed {len(ents)} unbalanced uploads: flagged {flags}, cleared {clears} "
                          "allocation rounding differences.")
