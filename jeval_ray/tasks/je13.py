"""JE-13 (L4): digit-pattern anomalies.

A digit anomaly is a reason to select entries and vouch them, not a finding in itself: the
exception is what vouching the selected entries proves wrong.

Planted: one preparer (the *scheme user*) whose manual entries break a digit pattern while every
other preparer's manual population conforms. The spike takes one of three shapes: amounts
clustered just below the user's review threshold (USD 4,5xx below 5,000 or 9,xxx below 10,000:
one leading digit spikes), amounts with high leading digits (two of 7-9 spike), or amounts that
keep ending in the same one or two whole-dollar endings (the last-two-digits test spikes while
the first-digit test conforms). The entries carrying the spike are the *selection*; the user's
other manual entries are ordinary. Every selected entry is a supplier invoice with its invoice
document ("Supplier invoice <reference> - <vendor>"). Each selected entry is made a defect or a
decoy at random after its amount, vendor, account, dates and approver are drawn, so the two look
the same on the listing:

* defect: the supplier invoice is for less than the user keyed (45-85% of it): the amount was
  inflated into the spike. Decisive facts: the amount keyed, the invoice's amount, the invoice
  (document id) and the user. Required evidence: the invoice and ``master:users`` (the user's
  review threshold), with digit statistics computed before the first DIGIT_ANOMALY flag
  (``baseline_before_claim``).
* decoy: the supplier invoice agrees with the amount keyed (a genuine invoice that happens to sit
  in the spike). Decisive facts: the amount and the invoice. Clearing evidence: the invoice.

A digit test needs a population: ``compute_stats`` answers "too small" below 50 entries, and a
handful of entries cannot move a 50-entry test. The knob counts are therefore scaled by one
factor of at least 2 so that the selection holds at least 12 entries (defects and decoys keep
their ratio; none when both are 0). Every manual amount is redrawn with stratified leading digits
and endings, so a conforming preparer shows close conformity even at 50 entries (a random sample
that small would look nonconforming by chance alone).

Look-alikes (not planted): recurring fixed fees under a contract, posted by preparers whose
populations are too small to test (identical amounts, so a leading digit and an ending repeat).
The contract states the fixed monthly fee. A digit rule applied at any population size (the naive
rule) flags them; a test that respects the minimum population never selects them.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.errors import ConfigError
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import (APPROVERS, BUSINESS_HOURS, COMPANY_NAME, HOLIDAYS_2025, PERIOD_END, PERIOD_START,
                                   PREPARERS, business_days)

SPEC = spec(
    "JE-13",
    "L4",
    'Digit-pattern anomalies',
    objective="Run first-digit (Benford) and last-two-digit tests on the manual entries, per preparer and for the population; select the entries behind any preparer's nonconforming result, vouch them to their support and flag those the support does not bear out.",
    defect="an entry selected by one user's failed digit test that its supplier invoice does not support",
    decoys='selected entries that vouch clean; fixed fees in populations too small to test',
    required_evidence='digit statistics for the user and the population; the selected entry\'s invoice',
    sources=('general_ledger', 'user_master', 'digit_statistics', 'invoices'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DIGIT_ANOMALY', "an entry selected by a failed digit test whose support does not bear it out"),
    ),
    withheld_variant=('compute_stats',),
    available=True,
)

BENFORD = np.log10(1 + 1 / np.arange(1, 10))
#: a digit test is only run on populations of at least this many entries (as ``compute_stats``)
MIN_TEST = 50
#: the smallest selection (defects + decoys) that makes the scheme user's digit test fail
MIN_SELECTED = 12
#: entries in the recurring-fee series of the small preparers (look-alikes of a digit cluster)
BATCH = 4
SMALL_CAP = 45  # preparers who must stay too small to test
AR_TEMPLATES = ("customer_invoice", "customer_receipt")
ENDING_POOL = (99, 49, 95, 75, 25, 11, 77, 88)
#: what a selected supplier invoice is for: (expense account, description on the invoice)
INVOICE_LINES = (
    ("6600", "repair and maintenance services"), ("6900", "office supplies"), ("6400", "consulting services"),
    ("7100", "software and IT services"), ("6700", "marketing services"), ("6300", "travel services"),
    ("6200", "utility services"), ("1200", "raw materials"),
)
GUIDE_TITLE = "Internal audit analytics guide - digit tests"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# (agreement title, expense account, vendor id, service)
CONTRACTS = (
    ("Facility maintenance service agreement", "6600", "V1005", "facility maintenance"),
    ("Software subscription agreement", "7100", "V1012", "ERP and analytics software subscription"),
    ("Equipment rental agreement", "6600", "V1020", "forklift and equipment rental"),
    ("Telecommunications services agreement", "6200", "V1021", "voice and data services"),
    ("Managed IT services agreement", "7100", "V1006", "managed IT services"),
    ("Marketing retainer agreement", "6700", "V1010", "marketing retainer"),
    ("Insurance premium instalment schedule", "7000", "V1009", "property insurance premium instalments"),
    ("Staffing services agreement", "6400", "V1019", "temporary staffing"),
    ("Consulting retainer agreement", "6400", "V1014", "finance advisory retainer"),
    ("Freight services agreement", "6900", "V1024", "scheduled freight services"),
)


def _planted_counts(n_defects: int, n_decoys: int) -> tuple[int, int]:
    """(defects, decoys) planted for the knob counts: both scaled by one factor (at least 2) so that
    the selection they form together holds at least ``MIN_SELECTED`` entries (none when both are 0)."""
    total = n_defects + n_decoys
    if total <= 0:
        return 0, 0
    f = max(2, -(-MIN_SELECTED // total))
    return f * n_defects, f * n_decoys


def _digit_counts(p: np.ndarray, n: int, fixed: np.ndarray | None = None) -> np.ndarray:
    """Counts per leading digit for ``n`` free entries so that, with ``fixed``, the group follows ``p``.

    Largest-remainder rounding: a stratified draw, so a 50-entry group conforms as closely as
    integer counts allow instead of carrying the sampling noise of a random sample.
    """
    fixed = np.zeros(9) if fixed is None else fixed
    want = np.clip(p * (n + fixed.sum()) - fixed, 0, None)
    if want.sum() <= 0:
        want = p.copy()
    want = want * n / want.sum()
    counts = np.floor(want).astype(int)
    short = n - counts.sum()
    order = np.argsort(-(want - counts), kind="stable")
    counts[order[:short]] += 1
    return counts


def _amount_cents(rng, digit: int, k: int, ending: int) -> int:
    """An amount with leading ``digit``, ``k + 1`` whole-dollar digits and whole-dollar ending ``ending``."""
    hundreds = int(rng.integers(0, 10 ** (k - 2))) if k > 2 else 0
    dollars = digit * 10**k + 100 * hundreds + ending
    return dollars * 100 + int(rng.integers(1, 100))  # never whole dollars, never round


def _decade(cents: int, digit: int) -> int:
    """The entry's original order of magnitude, kept between USD 100 and 89,999."""
    k = int(np.clip(np.floor(np.log10(max(cents, 100) / 100)), 2, 4))
    return 3 if digit * 10**k >= 90_000 else k


def _out_of_band(cents: int, limit_cents: float) -> bool:
    """Outside 80-100% of the preparer's own limit (the base population avoids that band)."""
    return not (0.8 * limit_cents <= cents < limit_cents)


def _ensure_manual(b, need: int, want: int, ar: np.ndarray) -> np.ndarray:
    """Non-AR manual entries, at least ``need`` and up to ``want``: converts automated vendor postings
    to manual ones when there are too few."""
    e = b.e
    idx = np.flatnonzero(e["manual"] & ~ar)
    if len(idx) >= want:
        return idx
    cand = np.flatnonzero(~e["manual"] & np.isin(e["template"], ["vendor_invoice", "vendor_payment"]))
    missing = min(want - len(idx), len(cand))
    if len(idx) + len(cand) < need:
        raise ConfigError(
            f"impossible knobs for JE-13: the digit tests need {need} manual entries but the slice of {b.n} "
            f"entries has only {len(idx) + len(cand)}; raise n_entries or lower n_defects/n_decoys"
        )
    conv = np.sort(b.rng.choice(cand, size=missing, replace=False))
    hol = np.array([h for h, _ in HOLIDAYS_2025], dtype="datetime64[D]")
    post = np.busday_offset(e["post_date"][conv], 0, roll="forward", holidays=hol)
    late = post > PERIOD_END
    post[late] = np.busday_offset(e["post_date"][conv][late], 0, roll="backward", holidays=hol)
    e["manual"][conv] = True
    e["post_date"][conv] = post
    e["entry_date"][conv] = post
    e["doc_date"][conv] = np.minimum(e["doc_date"][conv], post)
    e["time_s"][conv] = b.rng.integers(BUSINESS_HOURS[0] + 1800, BUSINESS_HOURS[1] - 1800, len(conv))
    return np.flatnonzero(e["manual"] & ~ar)


def _split(total: int, parts: int, rng) -> list[int]:
    """``total`` split into ``parts`` near-equal random sizes."""
    cuts = rng.multinomial(total - parts, np.full(parts, 1 / parts)) + 1 if total >= parts else np.zeros(parts, int)
    return [int(c) for c in cuts]


def _series_lengths(total: int, rng) -> list[int]:
    out = []
    while total > 0:
        n = int(min(total, rng.integers(4, 7)))
        if 0 < total - n < 4:
            n = total if total <= 6 else total - 4
        out.append(n)
        total -= n
    return out


def plant(b) -> None:
    rng = b.rng
    e = b.e
    limits = {u["user_id"]: u["approval_limit"] * 100 for u in b.users}
    names = {u["user_id"]: u["name"] for u in b.users}
    K, D = _planted_counts(b.n_defects, b.n_decoys)
    S = K + D  # the selection: entries carrying the digit spike, vouched one by one
    F = BATCH * int(rng.integers(2, 5))  # recurring fixed fees of the small preparers (not planted)
    shape = str(rng.choice(["threshold", "high_digits", "ending"], p=[0.4, 0.3, 0.3]))
    pool = [u for u in PREPARERS if u != "CRUIZ"]
    if shape == "threshold":
        user = str(rng.choice([u for u in pool if limits[u] in (5_000_00, 10_000_00)]))
    else:
        user = str(rng.choice(pool))
    peer = str(rng.choice([u for u in pool if u != user]))
    small = [u for u in pool if u not in (user, peer)]
    m_user = max(MIN_TEST + 4, S + int(rng.integers(22, 30))) if S else MIN_TEST + int(rng.integers(2, 10))
    m_peer = MIN_TEST + int(rng.integers(2, 8))
    # the small preparers host the fee series; enough ordinary entries around them keep the
    # population's digits conforming (a minimum, and a comfortable size when the slice allows)
    m_small_min = F + 4 * len(small)
    m_small_want = max(m_small_min, 2 * F + 12)

    ar = np.isin(e["template"], AR_TEMPLATES)
    idx = _ensure_manual(b, m_user + m_peer + m_small_min, m_user + m_peer + m_small_want, ar)
    idx = idx[rng.permutation(len(idx))]
    rest = len(idx) - m_user - m_peer
    sizes = [min(SMALL_CAP, s) for s in _split(rest, len(small), rng)]
    m_peer += rest - sum(sizes)  # a large slice: the conforming peer absorbs the surplus
    groups = {user: idx[:m_user], peer: idx[m_user : m_user + m_peer]}
    pos = m_user + m_peer
    for u, s in zip(small, sizes):
        groups[u] = idx[pos : pos + s]
        pos += s
    for u, g in groups.items():
        e["preparer"][g] = u

    b.add_document(
        "policy", GUIDE_TITLE,
        "Digit analysis of journal entries. 1. Population: manual journal entries, tested per preparer and for all "
        "preparers together. A first-digit test compares leading digits with Benford's law; a last-two-digits test "
        "compares the last two digits of the whole-dollar amount with a uniform distribution. 2. Conformity is "
        "judged on the mean absolute deviation (MAD) with Nigrini's bands: first digit below 0.006 close, 0.006 to "
        "0.012 acceptable, 0.012 to 0.015 marginally acceptable, above 0.015 nonconformity. 3. Populations of fewer "
        "than 50 entries are too small to test; do not draw conclusions from them. 4. Repeated identical amounts "
        "(fixed fees, instalments) are traced to the underlying agreement before any conclusion is drawn.",
        "2024-11-04",
    )
    b.add_document(
        "policy", "Manual journal entry review thresholds",
        "Manual journal entries are reviewed before posting by an approver other than the preparer. Entries of USD "
        "5,000 or more prepared by AP or AR clerks, and entries of USD 10,000 or more prepared by GL accountants, "
        "also require review by the Accounting Manager at month end. Thresholds are reviewed annually by the "
        "Controller.",
        "2024-12-02",
    )

    # ---- the scheme user's entries: spike entries (defects) and ordinary ones
    g = groups[user]
    spike, ordinary = g[:S], g[S:]
    endings_used: set[int] = set()
    if S == 0:
        _redraw(b, g, limits, endings=rng.permutation(100).tolist())
    elif shape == "threshold":
        thr = int(limits[user] // 100)
        spike_digits = {int(str(thr * 9 // 10)[0])}
        ends = rng.permutation(100)
        for j, i in enumerate(spike):
            hundreds = int(rng.integers(thr * 9 // 1000, thr // 100))
            e["debit_cents"][i] = (hundreds * 100 + int(ends[j % 100])) * 100 + int(rng.integers(1, 100))
        free_ends = ends[S % 100:].tolist() + ends[: S % 100].tolist()
        _redraw(b, ordinary, limits, allowed=[d not in spike_digits for d in range(1, 10)], endings=free_ends)
    elif shape == "high_digits":
        spike_digits = set(int(d) for d in rng.choice([7, 8, 9], size=2, replace=False))
        ends = rng.permutation(100)
        order = sorted(spike_digits)
        for j, i in enumerate(spike):
            d = order[j % 2]
            e["debit_cents"][i] = _amount_cents(rng, d, _decade(int(e["debit_cents"][i]), d), int(ends[j % 100]))
        free_ends = ends[S % 100:].tolist() + ends[: S % 100].tolist()
        _redraw(b, ordinary, limits, allowed=[d not in spike_digits for d in range(1, 10)], endings=free_ends)
    else:
        endings = [int(x) for x in rng.choice(ENDING_POOL, size=int(rng.integers(1, 3)), replace=False)]
        endings_used.update(endings)
        digits = np.repeat(np.arange(1, 10), _digit_counts(BENFORD, len(g)))
        digits = digits[rng.permutation(len(digits))]
        free_ends = [x for x in rng.permutation(100).tolist() if x not in endings]
        for j, i in enumerate(g):
            d = int(digits[j])
            end = endings[j % len(endings)] if j < S else free_ends[(j - S) % len(free_ends)]
            k = _decade(int(e["debit_cents"][i]), d)
            c = _amount_cents(rng, d, k, end)
            if j >= S and not _out_of_band(c, limits[user]):
                c = _amount_cents(rng, d, k - 1 if k > 2 else k + 1, end)
            e["debit_cents"][i] = c
    _vouch(b, spike, K, user, shape)

    # ---- the conforming peer: stratified digits and endings
    _redraw(b, groups[peer], limits, endings=rng.permutation(100).tolist())

    # ---- small preparers: recurring contract fees (decoys) plus ordinary entries, stratified jointly
    lengths = _series_lengths(F, rng)
    if len(lengths) > len(CONTRACTS):
        raise ConfigError(f"impossible knobs for JE-13: at most {len(CONTRACTS)} recurring-fee series fit")
    free = {u: list(groups[u]) for u in small}
    fixed = np.zeros(9)
    series = []
    contract_pick = rng.choice(len(CONTRACTS), size=len(lengths), replace=False)
    n_small = sum(len(groups[u]) for u in small)
    for L, c in zip(lengths, contract_pick):
        owner = max(small, key=lambda u: (len(free[u]), u))
        if len(free[owner]) < L:
            raise ConfigError("impossible knobs for JE-13: too few manual entries for the recurring-fee series")
        members, free[owner] = free[owner][:L], free[owner][L:]
        cap = np.clip(BENFORD * n_small - fixed, 0, None) ** 2
        d = int(rng.choice(np.arange(1, 10), p=cap / cap.sum())) if cap.sum() > 0 else 1
        end = int(rng.choice([x for x in range(100) if x not in endings_used]))
        endings_used.add(end)
        fixed[d - 1] += L
        series.append((owner, members, d, end, int(c)))
    ar_manual = np.flatnonzero(e["manual"] & ar)
    ordinary_small = [i for u in small for i in free[u]]
    ends_small = [x for x in rng.permutation(100).tolist() if x not in endings_used]
    if len(ar_manual) >= MIN_TEST:
        # the AR clerk is testable on a large slice: stratify that population on its own
        _redraw(b, ar_manual, limits, endings=ends_small)
    else:
        ordinary_small += ar_manual.tolist()
    _redraw(b, np.array(ordinary_small, dtype=np.int64), limits, fixed=fixed, endings=ends_small)
    bdays = business_days(PERIOD_START, PERIOD_END)
    for owner, members, d, end, c in series:
        title, acct, vendor_id, service = CONTRACTS[c]
        vendor = next(v for v in b.vendors if v["vendor_id"] == vendor_id)
        k = 3 if d > 1 else int(rng.integers(3, 5))
        amount = _amount_cents(rng, d, k, end)
        if not _out_of_band(amount, limits[owner]):
            amount = _amount_cents(rng, d, k - 1, end)
        m0 = int(rng.integers(1, 13 - len(members) + 1))
        day = int(rng.integers(2, 9))
        start = f"2025-{m0:02d}-01"
        b.add_document(
            "contract", f"{title} - {vendor['name']}",
            f"{title} between {COMPANY_NAME} and {vendor['name']} (vendor {vendor_id}). Scope: {service}. "
            f"Term: 12 months from {start}, renewing annually unless terminated with 60 days' notice. "
            f"Fees: a fixed monthly fee of USD {amount / 100:,.2f}, invoiced at the start of each month and payable "
            f"within 30 days; the fee is not indexed during the term. Accounting: each monthly invoice is entered in "
            f"accounts payable by {names[owner]} ({owner}) to account {acct}. Signed for {COMPANY_NAME} by "
            f"{names['HJOHANSSON']}, Accounting Manager.",
            str(np.datetime64(start) - int(rng.integers(10, 40))),
        )
        for j, i in enumerate(sorted(members)):
            month_first = np.datetime64(f"2025-{m0 + j:02d}-01")
            post = bdays[np.searchsorted(bdays, month_first + day)]
            e["post_date"][i] = post
            e["entry_date"][i] = post
            e["doc_date"][i] = post - int(rng.integers(0, 4))
            e["debit_cents"][i] = amount
            e["debit_account"][i] = acct
            e["credit_account"][i] = "2000"
            e["doc_type"][i] = "KR"
            e["vendor_id"][i] = vendor_id
            e["template"][i] = "vendor_invoice"
            e["description"][i] = f"{MONTHS[m0 + j - 1]} monthly fee {vendor['name']}"
            b.used[i] = True
    e["credit_cents"][:] = np.where(e["manual"], e["debit_cents"], e["credit_cents"])
    _reapprove(b, np.flatnonzero(e["manual"]), limits)


def _vouch(b, spike: np.ndarray, k: int, user: str, shape: str) -> None:
    """Make the selection vouchable: every spike entry becomes a supplier invoice with its invoice
    document; ``k`` of them (at random) were keyed above what the supplier invoiced (defects), the rest
    agree with their invoice (decoys). Defects and decoys differ only in the invoice's amount."""
    rng = b.rng
    e = b.e
    names = {u["user_id"]: u["name"] for u in b.users}
    receivers = [u for u in ("DPATEL", "EMUELLER", "FNGUYEN", "GSILVA") if u != user]
    order = rng.permutation(len(spike))
    for pos, i in enumerate(spike):
        i = int(i)
        v = b.vendors[int(rng.integers(0, len(b.vendors)))]
        ref = "INV-" + re.sub(r"\D", "", str(e["reference"][i]))
        acct, what = INVOICE_LINES[int(rng.integers(0, len(INVOICE_LINES)))]
        e["template"][i] = "vendor_invoice"
        e["doc_type"][i] = "KR"
        e["debit_account"][i] = acct
        e["credit_account"][i] = "2000"
        e["vendor_id"][i] = v["vendor_id"]
        e["reference"][i] = ref
        e["description"][i] = f"Invoice {ref} {v['name']}"
        keyed = int(e["debit_cents"][i])
        defect = bool(order[pos] < k)
        billed = int(keyed * rng.uniform(0.45, 0.85)) if defect else keyed
        inv_date = str(e["doc_date"][i])
        receiver = str(rng.choice(receivers))
        doc = b.add_document(
            "invoice", f"Supplier invoice {ref} - {v['name']}",
            f"Supplier invoice {ref}\nVendor: {v['name']} ({v['vendor_id']})\nBill to: {COMPANY_NAME}, accounts "
            f"payable\nInvoice date: {inv_date}\nDescription: {what}\nAmount due: USD {billed / 100:,.2f}\n"
            f"Terms: net 30\nGoods receipt GR-{int(rng.integers(100_000, 999_999))} confirmed by {names[receiver]} "
            f"({receiver}) on {inv_date}.",
            inv_date,
        )
        b.used[i] = True
        if defect:
            b.add_defect(i, f"digit_pattern_{shape}_invoice_overstated", "DIGIT_ANOMALY", [doc, "master:users"], keyed - billed,
                         facts=[keyed / 100, billed / 100, f"{{D:{doc}}}", user])
        else:
            b.add_decoy(i, f"digit_pattern_{shape}_invoice_agrees", [doc], facts=[keyed / 100, f"{{D:{doc}}}"])


def _redraw(b, idx, limits, *, allowed=None, fixed=None, endings=None) -> None:
    """Give ``idx`` fresh amounts whose leading digits follow Benford (stratified) and whose endings
    come from ``endings`` in order; each entry keeps its order of magnitude. Vectorised: a large
    slice redraws hundreds of thousands of manual amounts."""
    idx = np.asarray(idx, dtype=np.int64)
    if len(idx) == 0:
        return
    rng = b.rng
    e = b.e
    p = BENFORD.copy()
    if allowed is not None:
        p = np.where(allowed, p, 0.0)
        p = p / p.sum()
    digits = np.repeat(np.arange(1, 10), _digit_counts(p, len(idx), fixed))
    digits = digits[rng.permutation(len(digits))].astype(np.int64)
    endings = np.asarray(list(endings) if endings else list(range(100)), dtype=np.int64)
    end = endings[np.arange(len(idx)) % len(endings)]
    old = np.maximum(e["debit_cents"][idx], 100)
    k = np.clip(np.floor(np.log10(old / 100)), 2, 4).astype(np.int64)
    k = np.where(digits * 10**k >= 90_000, 3, k)  # as _decade: between USD 100 and 89,999
    lim = np.array([limits[str(u)] for u in e["preparer"][idx]], dtype=np.float64)

    def draw(k: np.ndarray) -> np.ndarray:  # as _amount_cents, one draw per entry
        hundreds = np.floor(rng.random(len(k)) * 10.0 ** (k - 2)).astype(np.int64)
        return (digits * 10**k + 100 * hundreds + end) * 100 + rng.integers(1, 100, len(k))

    c = draw(k)
    band = (0.8 * lim <= c) & (c < lim)
    if band.any():
        c[band] = draw(np.where(k > 2, k - 1, k + 1))[band]
    e["debit_cents"][idx] = c


def _reapprove(b, idx, limits) -> None:
    """Approver: someone other than the preparer whose limit covers the (redrawn) amount, chosen
    uniformly (vectorised: ``APPROVERS`` ascend by limit)."""
    e = b.e
    idx = np.asarray(idx, dtype=np.int64)
    if len(idx) == 0:
        return
    lims = np.array([limits[a] for a in APPROVERS])
    first = np.searchsorted(lims, e["debit_cents"][idx], side="left")
    pos = {a: i for i, a in enumerate(APPROVERS)}
    own = np.array([pos.get(str(u), -1) for u in e["preparer"][idx]])
    excl = (own >= first).astype(np.int64)  # the preparer is one of the eligible approvers
    k = first + np.floor(b.rng.random(len(idx)) * (len(APPROVERS) - first - excl)).astype(np.int64)
    k = np.where((own >= first) & (k >= own), k + 1, k)
    e["approver"][idx] = np.array(APPROVERS)[k]


# ---------------------------------------------------------------------------- strategies
def _first_digit(amount: float) -> int:
    return int(f"{abs(amount):.2f}".lstrip("0.")[0])


def _ending(amount: float) -> int:
    return int(round(abs(amount) * 100)) // 100 % 100


def _local_test(amounts: list[float], kind: str) -> dict:
    """The digit test done by hand from ledger rows (when ``compute_stats`` is withheld)."""
    n = len(amounts)
    if n < MIN_TEST:
        return {"n": n, "message": f"population of {n} entries is too small for a digit test"}
    if kind == "first":
        keys, expected = [str(d) for d in range(1, 10)], BENFORD
        obs = [_first_digit(a) for a in amounts]
        counts = np.array([obs.count(d) for d in range(1, 10)])
    else:
        keys, expected = [str(d) for d in range(100)], np.full(100, 0.01)
        obs = [_ending(a) for a in amounts]
        counts = np.array([obs.count(d) for d in range(100)])
    mad = float(np.mean(np.abs(counts / n - expected)))
    bands = ((0.006, "close conformity"), (0.012, "acceptable conformity"), (0.015, "marginally acceptable conformity"))
    if kind != "first":
        bands = ((0.0015, "close conformity"), (0.002, "acceptable conformity"), (0.003, "marginally acceptable conformity"))
    verdict = next((label for lim, label in bands if mad < lim), "nonconformity")
    dist = {k: {"count": int(c), "observed": c / n, "expected": float(x)} for k, c, x in zip(keys, counts, expected)}
    return {"n": n, "kind": kind, "mad": round(mad, 5), "conformity": verdict, "distribution": dist}


def _digit_stats(kit: Kit, filters: list[dict], kind: str, amounts: list[float]):
    """A digit test through ``compute_stats`` when the tool is there, else computed by hand."""
    if kit.has("compute_stats"):
        obs = yield from kit.call("compute_stats", filters=filters, digits=kind, top_z=0)
        return obs.get("digit_test") or {"n": obs.get("n", 0), "message": obs.get("message", "")}
    return _local_test(amounts, kind)


def _manual_rows(kit: Kit):
    rows = yield from kit.ledger(
        filters=[{"column": "source", "op": "eq", "value": "manual"}, {"column": "line_no", "op": "eq", "value": 1}],
        columns=["entry_id", "debit", "preparer", "posting_date", "description", "reference"],
    )
    by_user: dict[str, list[dict]] = {}
    for r in rows:
        by_user.setdefault(r["preparer"], []).append(r)
    return by_user


def _spikes(test: dict, kind: str, n: int) -> set[int]:
    """Digits (or endings) clearly over-represented in a digit test's distribution."""
    dist = test.get("distribution", {})
    if kind == "first":
        return {int(k) for k, v in dist.items() if v["observed"] - v["expected"] >= 0.04}
    floor = max(4, -(-n // 100) + 3)
    return {int(k) for k, v in dist.items() if v["count"] >= floor}


def _user_filters(user: str, op: str = "eq") -> list[dict]:
    return [{"column": "preparer", "op": op, "value": user}, {"column": "source", "op": "eq", "value": "manual"}]


def naive(kit: Kit):
    """Flags every manual entry in a cluster of leading digits or endings for its preparer, at any
    population size, without vouching the entries or reading the agreements behind recurring amounts."""
    by_user = yield from _manual_rows(kit)
    hits: dict[str, str] = {}
    for user, rows in sorted(by_user.items()):
        n = len(rows)
        firsts = [_first_digit(r["debit"]) for r in rows]
        ends = [_ending(r["debit"]) for r in rows]
        hot = {d for d in range(1, 10) if firsts.count(d) >= 3 and firsts.count(d) >= 2 * BENFORD[d - 1] * n}
        hot_end = {x for x in set(ends) if ends.count(x) >= 3}
        for r, f, x in zip(rows, firsts, ends):
            if f in hot or x in hot_end:
                hits[r["entry_id"]] = f"{user}: leading digit {f} or ending {x:02d} repeats more often than expected"
    for eid, why in sorted(hits.items()):
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "DIGIT_ANOMALY", [], f"Entry {eid}: {why}.")
    yield from kit.submit(f"Flagged {len(hits)} entries in digit clusters.")


def careful(kit: Kit):
    """Tests every preparer with enough manual entries, selects the spike entries of the user whose test
    fails while the rest of the population conforms, and vouches each selected entry to its supplier
    invoice: flags the entries keyed above what the supplier invoiced, clears those that agree."""
    yield from kit.master("users")
    by_user = yield from _manual_rows(kit)
    manual = [r for rows in by_user.values() for r in rows]
    pop = yield from _digit_stats(kit, [{"column": "source", "op": "eq", "value": "manual"}], "first",
                                  [r["debit"] for r in manual])
    found: tuple[str, str, set[int], dict] | None = None
    for user in sorted(u for u, rows in by_user.items() if len(rows) >= MIN_TEST):
        amounts = [r["debit"] for r in by_user[user]]
        first = yield from _digit_stats(kit, _user_filters(user), "first", amounts)
        last = yield from _digit_stats(kit, _user_filters(user), "last_two", amounts)
        if first.get("conformity") == "nonconformity" and _spikes(first, "first", len(amounts)):
            cand = (user, "first", _spikes(first, "first", len(amounts)), first)
        elif _spikes(last, "last_two", len(amounts)):
            cand = (user, "last_two", _spikes(last, "last_two", len(amounts)), last)
        else:
            continue
        # several failing users: keep the most extreme one (the scheme is one user's)
        if found is None or cand[3].get("mad", 0) / _band(cand[1]) > found[3].get("mad", 0) / _band(found[1]):
            found = cand
    if found is None:
        yield from kit.submit(f"Population first-digit MAD {pop.get('mad')} ({pop.get('conformity', pop.get('message'))}); "
                              "no preparer fails a digit test, nothing selected.")
        return
    user, kind, spikes, test = found
    rest = [r["debit"] for u, rows in by_user.items() if u != user for r in rows]
    base = yield from _digit_stats(kit, _user_filters(user, "ne"), kind, rest)
    key = _first_digit if kind == "first" else _ending
    selected = [r for r in by_user[user] if key(r["debit"]) in spikes]
    invoices = {}
    for d in (yield from kit.documents("invoice")):
        m = re.match(r"Supplier invoice (\S+) - ", d["title"])
        if m:
            invoices[m.group(1)] = d["doc_id"]
    test_name = "first-digit" if kind == "first" else "last-two-digits"
    why = (f"{user}'s {test.get('n')} manual entries fail the {test_name} test (MAD {test.get('mad')}, "
           f"{test.get('conformity')}) while the other preparers' {base.get('n')} conform (MAD {base.get('mad')})")
    n_flag = n_clear = 0
    for r in selected:
        doc = invoices.get(r["reference"])
        if doc is None or kit.calls_left <= 3:
            continue
        body = (yield from kit.open(doc)).get("body", "")
        m = re.search(r"Amount due: USD ([\d,]+\.\d\d)", body)
        if m is None:
            continue
        billed = float(m.group(1).replace(",", ""))
        if abs(billed - r["debit"]) > 0.005:
            yield from kit.flag(
                r["entry_id"], "DIGIT_ANOMALY", [doc, "master:users"],
                f"Selected by the digit test ({why}). Vouched to supplier invoice {doc}: the invoice is for USD "
                f"{billed:,.2f} but {user} keyed USD {r['debit']:,.2f}, overstating the invoice.")
            n_flag += 1
        else:
            yield from kit.clear(
                r["entry_id"], [doc],
                f"Selected by the digit test; vouched to supplier invoice {doc}, which is for USD {billed:,.2f}, the "
                f"amount keyed.")
            n_clear += 1
    yield from kit.submit(
        f"Population first-digit MAD {pop.get('mad')} ({pop.get('conformity', pop.get('message'))}). {user} fails the "
        f"{test_name} test; vouched {len(selected)} selected entries to their supplier invoices: "
        f"{n_flag} keyed above the invoice (flagged), {n_clear} agree (cleared).")


def _band(kind: str) -> float:
    """The nonconformity threshold of a test kind, to compare MADs across kinds."""
    return 0.015 if kind == "first" else 0.003
