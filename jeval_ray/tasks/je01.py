"""JE-1 (L1): unbalanced entries.

The ERP posts only balanced documents keyed in it; journals prepared in spreadsheets reach the
ledger through the GL upload tool, which posts each upload file as one entry (its debit lines on
one line, its credit lines on the other) and accepts a file whose totals differ by up to a
tolerance (USD 0.50, 1.00 or 2.00, drawn per seed and stated in the journal-entry policy). So
every unbalanced entry is an upload, and every difference is within the tool's tolerance: the
size of a difference does not tell an error from a rounding.

What does is the upload file (one document per unbalanced entry, titled with the entry's
reference). The policy accepts one cause only: currency-conversion rounding of a file prepared
in a foreign currency, balanced in that currency and converted to USD line by line, which can
reach at most half a cent (USD 0.005) per converted line.

Planted, all drawn from one pool (manual accruals and reclasses; the same difference, timing,
amount and text distributions) and made a defect or a decoy at random:

* Decoys (``conversion_rounding_within_limit``): a file in CAD, EUR, GBP or MXN, balanced in
  that currency, whose USD difference is at most half a cent per converted line. Decisive facts:
  the upload file, its currency, the difference and the number of converted lines.
* Defects ``usd_file_not_balanced``: a file prepared in USD, so nothing was converted and the
  difference is a keying error in the spreadsheet. Decisive facts: the file, USD, the difference.
* Defects ``difference_exceeds_conversion_rounding``: a foreign-currency file with so few lines
  that conversion rounding cannot explain the difference (more than USD 0.005 a line). Decisive
  facts: the file, its currency, the difference and the number of lines.

Required evidence (and clearing evidence): the policy and the entry's upload file. ``near_miss``
moves decoys' differences closer to their files' rounding limit (and the line-limit defects'
closer from above).
"""

from __future__ import annotations

import math
import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-1",
    "L1",
    'Unbalanced entries',
    objective='Find journal entries whose debits and credits do not balance, other than the differences the journal-entry policy accepts.',
    defect='unbalanced upload whose difference is not currency-conversion rounding (a USD file, or more than half a cent per converted line)',
    decoys='foreign-currency uploads whose difference is conversion rounding within the policy limit',
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

POLICY_TITLE = "Journal entry policy - balancing and rounding"
UPLOAD_TITLE = "GL upload file"
#: the most conversion rounding one converted line can add (USD)
PER_LINE = 0.005
#: foreign currencies of upload files: code and the range of the USD rate
CURRENCIES = (("CAD", 0.70, 0.76), ("EUR", 1.04, 1.12), ("GBP", 1.22, 1.32), ("MXN", 0.050, 0.058))
#: templates of spreadsheet journals (no vendor or customer line)
UPLOAD_TEMPLATES = ("accrual", "reclass")


def plant(b) -> None:
    """Add the policy; turn a pool of manual journals into uploads with a difference within the
    tool's tolerance; make each a decoy (conversion rounding) or a defect (not rounding) at random."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    tol_cents = int(rng.choice([50, 100, 200]))
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 4.2 Balancing. Every journal entry must balance: total debits must equal total credits. Entries "
        "keyed in the ERP cannot be posted unbalanced. Journals prepared in spreadsheets are posted through the GL "
        "upload tool, which posts each upload file as one entry (the file's debit lines summarised on one line, its "
        f"credit lines on another) and rejects a file whose debit and credit totals differ by more than USD "
        f"{tol_cents / 100:.2f}.\n"
        "Section 4.3 Conversion rounding. The only difference this policy accepts is currency-conversion rounding: a "
        "file prepared in a foreign currency, balanced in that currency and converted to USD line by line at the "
        f"treasury rate, may differ after conversion by at most USD {PER_LINE:.3f} (half a cent) per converted line. "
        "Any other difference, including any difference on a file prepared in USD, is an error in the file and must "
        "be corrected before period close.",
        "2024-12-15",
    )
    pool = e["manual"] & np.isin(e["template"], UPLOAD_TEMPLATES)
    k = b.n_defects + b.n_decoys
    if int((pool & ~b.used).sum()) < k:
        pool = e["manual"] if int((e["manual"] & ~b.used).sum()) >= k else None
    chosen = b.pick(k, where=pool, what="manual journals")
    roles = np.array([1] * b.n_defects + [0] * b.n_decoys)[rng.permutation(k)]
    for idx, is_defect in zip(chosen, roles):
        idx = int(idx)
        # the difference: one distribution for every upload, within the tool's tolerance and scaled to
        # the journal's size (a file's lines average USD 5 or more, so a small journal has few lines)
        cap = min(tol_cents, max(3, int(e["debit_cents"][idx]) // 4000))
        d = int(rng.integers(3, cap + 1))
        sign = 1 if rng.random() < 0.5 else -1
        e["credit_cents"][idx] = e["debit_cents"][idx] + sign * d
        kind = "decoy" if not is_defect else ("usd" if rng.random() < 0.5 else "few_lines")
        _upload(b, idx, kind, d, near, policy)


def _upload(b, idx: int, kind: str, d: int, near: float, policy: int) -> None:
    """Write the entry's upload file and record the entry as a decoy or a defect."""
    rng = b.rng
    e = b.e
    debit, credit = int(e["debit_cents"][idx]), int(e["credit_cents"][idx])
    ref = str(e["reference"][idx])
    when = b.date_str(e["entry_date"][idx])
    head = (f"Upload file for journal {ref} (entry {{E:{idx}}}), prepared by {e['preparer'][idx]} and uploaded on "
            f"{when}. Debit account {e['debit_account'][idx]}, credit account {e['credit_account'][idx]}.\n")
    posted = f"Posted in USD: debit {debit / 100:,.2f}, credit {credit / 100:,.2f}; difference {d / 100:.2f}."
    if kind == "usd":
        n = int(rng.integers(4, 60))
        body = (head + f"Source currency: USD (no conversion). Lines: {n}.\n"
                f"File totals in USD: debit {debit / 100:,.2f}, credit {credit / 100:,.2f}.\n" + posted)
        doc = b.add_document("upload_file", f"{UPLOAD_TITLE} {ref}", body, when)
        b.add_defect(idx, "usd_file_not_balanced", "UNBALANCED", [policy, doc], facts=[f"{{D:{doc}}}", "USD", d / 100])
        return
    cur, lo, hi = CURRENCIES[int(rng.integers(0, len(CURRENCIES)))]
    rate = round(float(rng.uniform(lo, hi)), 5)
    if kind == "decoy":
        # enough lines for the rounding to reach the difference; near_miss brings the limit down to it
        slack = rng.uniform(1.05, 1.1 + 2.9 * (1 - near))
        n = max(2, math.ceil(d / (PER_LINE * 100) * slack))
    else:
        # too few lines: at most half a cent each cannot make the difference
        share = rng.uniform(0.15 + 0.6 * near, 0.2 + 0.7 * near)
        n = max(2, min(int(d / (PER_LINE * 100) * share), math.ceil(d / (PER_LINE * 100)) - 1))
    src = round(debit / 100 / rate, 2)
    body = (head + f"Source currency: {cur}. Rate: {rate:.5f} USD per {cur} (treasury rate of the day).\n"
            f"Lines: {n}, each converted to USD separately.\n"
            f"File totals in {cur}: debit {src:,.2f}, credit {src:,.2f}.\n" + posted)
    doc = b.add_document("upload_file", f"{UPLOAD_TITLE} {ref}", body, when)
    facts = [f"{{D:{doc}}}", cur, d / 100, n]
    if kind == "decoy":
        b.add_decoy(idx, "conversion_rounding_within_limit", [policy, doc], facts=facts)
    else:
        b.add_defect(idx, "difference_exceeds_conversion_rounding", "UNBALANCED", [policy, doc], facts=facts)


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
    """(source currency, number of lines) from an upload file's text."""
    cur = re.search(r"Source currency: ([A-Z]{3})", body)
    lines = re.search(r"Lines: (\d+)", body)
    return (cur.group(1) if cur else ""), (int(lines.group(1)) if lines else 0)


def careful(kit: Kit):
    """Reads the policy (tolerance, half a cent per converted line), then each unbalanced entry's
    upload file: clears conversion rounding within the limit, flags every other difference."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "balancing and rounding" in d["title"].lower()), None)
    per_line, tol = PER_LINE, 0.0
    if policy:
        body = (yield from kit.open(policy)).get("body", "")
        m = re.search(r"differ by more than USD ([\d,]+\.\d\d)", body)
        tol = float(m.group(1).replace(",", "")) if m else 0.0
        m = re.search(r"at most USD (\d+\.\d+) \(half a cent\) per converted line", body)
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
        cur, n = _read_upload((yield from kit.open(doc)).get("body", ""))
        ev = [doc] + ([policy] if policy else [])
        limit = round(n * per_line, 3)
        if cur == "USD":
            flags += 1
            yield from kit.flag(eid, "UNBALANCED", ev,
                                f"Entry {eid}: upload file {doc} was prepared in USD, so nothing was converted; the "
                                f"difference of {d:.2f} is a keying error, not conversion rounding ({policy}).")
        elif not cur or d > limit + 1e-9 or (tol and d > tol + 1e-9):
            flags += 1
            yield from kit.flag(eid, "UNBALANCED", ev,
                                f"Entry {eid}: upload file {doc} ({cur}) has {n} converted lines, so conversion rounding "
                                f"can reach at most {limit:.3f}; the difference of {d:.2f} is larger and is an error "
                                f"under {policy}.")
        else:
            clears += 1
            yield from kit.clear(eid, ev,
                                 f"Entry {eid}: upload file {doc} was prepared in {cur}, balanced in {cur}, with {n} "
                                 f"lines converted separately; the difference of {d:.2f} is within the {limit:.3f} "
                                 f"rounding limit (half a cent a line) and the USD {tol:.2f} tolerance of {policy}.")
    yield from kit.submit(f"Reviewed {len(ents)} unbalanced uploads: flagged {flags}, cleared {clears} "
                          "currency-conversion rounding differences.")
