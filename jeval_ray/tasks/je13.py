"""JE-13 (L4): digit-pattern anomalies in the manual journal entries, selected and vouched.

A digit anomaly is a reason to select entries and vouch them, not a finding in itself: the
exception is what vouching the selected entries proves wrong.

The support pack holds the internal-audit guide to digit tests, which fixes the method: the
population is the manual journal entries measured by their first-line debit (USD 10 or more, as
``compute_stats`` counts them), tested per preparer (at least ``MIN_TEST`` entries) and for all
preparers together. For every leading digit the guide computes Nigrini's z-statistic
``(|p_obs - p_exp| - 1/(2n)) / sqrt(p_exp (1 - p_exp) / n)`` against Benford's proportion; a digit
over-represented with z above ``Z_SELECT`` (4: every preparer and digit is tested, so the usual
1.96 would select by chance) in a preparer's own test selects that preparer's entries beginning
with it, and each selected entry is vouched to its source document (the books' own document behind
the entry, in the pack; its number is the entry's reference). The population test is the baseline,
not a selector: a population excess is traced to the preparers behind it through their own tests,
and one that no preparer's test shows selects nothing. Selecting the population's excess digit
across all preparers would pull in entries that have no reason to be vouched: the scheme clerk's
spike alone lifts the population's digit 4 above ``Z_SELECT`` in some worlds (seed 951: z 4.53
over 309 entries, 2.07 without the clerk, and 30 of the 54 entries beginning with 4 are other
preparers' with no source document in the pack), and the books' own mix now and then lifts
another digit (seed 1: digit 5, which no preparer's test over-represents).

Planted: one AP clerk (the *scheme user*, whose review threshold in ``master:users`` is USD 5,000)
keyed vendor invoices just below the threshold (USD 4,500.00-4,999.99), so the leading digit 4
is over-represented in their entries. The moved entries are the clerk's own manual two-line vendor
invoices without a goods receipt, originally between USD 500 and 3,999.99, paid in the year by
one payment or not at all, of vendors billing by the job (never rent, subscriptions or premiums:
a vendor billing one fixed sum every period shows any other sum against its other months). How many are moved is set so that the clerk's digit-4 z-statistic
reaches about ``Z_SELECT`` + 1 (at least ``MIN_SELECTED``, and the knob counts scaled together when they
are fewer). Each moved entry's new amount is drawn before it is made a defect or a decoy, so
the two look the same on the listing:

* defect ``invoice_keyed_above_billed`` (criteria ``DIGIT_ANOMALY``): the vendor invoice (the books'
  document) is for the original amount; the clerk keyed more, just under the review threshold.
  The payment run paid what the vendor billed, so accounts payable keeps the excess open.
  Decisive facts: the amount keyed, the invoice's amount, the invoice, the clerk. Required
  evidence: the invoice and ``master:users`` (the clerk's threshold), with digit statistics
  before the first DIGIT_ANOMALY flag (``baseline_before_claim``).
* decoy ``invoice_agrees``: the invoice (the books' document worded for the amount) bills the amount
  keyed, and its payment, when made in the year and where month-end cash covers it, pays it.
  Decisive facts: the amount and the invoice. Clearing evidence: the invoice.

Unplanted look-alikes: the scheme user's genuine entries beginning with 4 are selected with the
planted ones and vouch clean, and now and then another preparer's digit crosses the threshold by
the books' own structure (recurring fees, matched invoices). Every selected entry's source
document is in the pack (so are a few ordinary entries'). Over seeds 0-49 at the default size the
test selects 10.1 unplanted entries per world (2 to 35; 39 % of everything it selects) besides
16.1 planted ones.

The default world is a year of about 1,200 entries (``default_knobs``): each AP clerk then keys
about 80-105 manual entries, enough for a digit test and for a spike of 12-21 entries to stand out.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.protocol.kit import Kit
from jeval_ray.books import master as md
from jeval_ray.errors import ConfigError
from jeval_ray.builder.spec import Knobs, key, spec
from jeval_ray.tasks.je12 import _payments, billed_document, cash_covers, first_lines, pay_more, preparer_codes

SPEC = spec(
    "JE-13",
    "L4",
    'Digit-pattern anomalies',
    objective="Run the first-digit (Benford) test on the manual journal entries, for the population and per preparer, as the digit-test guide in the support pack prescribes; select the entries the guide's selection rule calls for, vouch them to their source documents and flag those the support does not bear out.",
    defect="an entry selected by a preparer's over-represented leading digit that its source document does not support",
    decoys='selected entries that vouch clean (planted and genuine)',
    required_evidence="digit statistics for the preparer and the population; the selected entry's source document; master:users",
    sources=('general_ledger', 'user_master', 'digit_statistics', 'source_documents'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DIGIT_ANOMALY', "an entry selected by a digit test whose support does not bear it out"),
    ),
    withheld_variant=('compute_stats',),
    default_knobs=Knobs(n_entries=1200),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "invoice_keyed_above_billed",
        evidence="the selected entry's source document (the vendor invoice) in the pack; master:users (the "
                 "clerk's USD 5,000 threshold); the digit test of the clerk's manual entries",
        facts="the amount keyed (USD 4,500-4,999.99, just under the threshold); the invoice's lower amount; the "
              "invoice; the clerk whose leading digit 4 is over-represented",
        conclusion="The clerk's first-digit test shows 4 over-represented; vouching the entries behind it shows this "
                   "invoice keyed at USD y against USD x billed, just under the clerk's review threshold: expense and "
                   "accounts payable overstated by y - x; a pattern of amounts kept below the review threshold, "
                   "to be raised with those charged with governance.",
        standard="AS 2401.58 and .61 (examining journal entries and the characteristics of those selected); "
                 "ISA 240.32(a); AS 1105.15 (inspection of documents)"),
    key("decoy", "invoice_agrees",
        evidence="the selected entry's source document (the vendor invoice) in the pack",
        facts="the invoice bills the amount keyed (and its payment, if made in the year, pays it)",
        conclusion="Selected by the digit test; vouched to the vendor invoice, which bills the amount keyed: no "
                   "misstatement; cleared.",
        standard="AS 2401.58 and .61; AS 1105.15"),
)

BENFORD = np.log10(1 + 1 / np.arange(1, 10))
#: a digit test is only run on populations of at least this many entries (as ``compute_stats``)
MIN_TEST = 50
#: a leading digit is over-represented when its z-statistic exceeds this
Z_SELECT = 4.0
#: the smallest planted selection
MIN_SELECTED = 12
THRESHOLD_CENTS = 5_000_00
SCHEME_USERS = ("AKIM", "BOKAFOR")
GUIDE_TITLE = "Internal audit analytics guide - digit tests"
CODE = "DIGIT_ANOMALY"


def _guide(b) -> int:
    return b.add_document(
        "policy", GUIDE_TITLE,
        "Digit analysis of journal entries.\n"
        "1. Population: the manual journal entries, measured by the debit of their first line (amounts of USD 10 "
        "or more), tested per preparer (user id) and for all preparers together.\n"
        f"2. Populations of fewer than {MIN_TEST} entries are too small to test; do not draw conclusions from them.\n"
        "3. First-digit test: compare the proportion of each leading digit with Benford's law. The mean absolute "
        "deviation (MAD) summarises conformity, but small populations and recurring fees make it noisy, so the "
        "selection is made digit by digit.\n"
        "4. For each digit compute z = (|observed proportion - expected proportion| - 1/(2n)) / sqrt(expected x "
        f"(1 - expected) / n). A digit is over-represented when its observed proportion exceeds the expected one and "
        f"z exceeds {Z_SELECT:.0f} (every preparer and every digit is tested, so the usual 1.96 would select by "
        "chance).\n"
        "5. The population test is the baseline: it shows whether the manual entries as a whole conform, not whose "
        "entries to select. A digit over-represented in the population is traced to the preparers behind it "
        "through their own tests (step 4). Entries are selected only from a preparer whose own test over-represents "
        "a digit: that preparer's entries beginning with that digit. A population excess that no preparer's own "
        "test shows selects nothing; record it in the working papers with the preparers' tests.\n"
        "6. An over-represented digit is a reason to select entries, not a finding. Vouch each selected entry to "
        "its source document in the PBC pack (the document number is the entry's reference): the amount keyed must "
        "be the amount on the document. Selected entries that agree are cleared; selected entries that disagree or "
        "have no source document are reported.",
        "2024-11-04",
    )


def _review_policy(b) -> int:
    return b.add_document(
        "policy", "Manual journal entry review thresholds",
        "Manual journal entries are approved before posting by an approver other than the preparer. Entries of USD "
        "5,000 or more keyed by AP or AR clerks, and entries of USD 10,000 or more keyed by GL accountants, also "
        "require review by the Accounting Manager at month end. Thresholds are reviewed annually by the Controller.",
        "2024-12-02",
    )


def _first_digit_of(cents: np.ndarray) -> np.ndarray:
    x = cents / 100.0
    return np.clip((x / 10 ** np.floor(np.log10(np.maximum(x, 1e-9)))).astype(int), 1, 9)


def digit_z(counts: np.ndarray, n: int) -> np.ndarray:
    """Nigrini's z-statistic of each leading digit's count (0 where the digit is not over-represented)."""
    p = counts / n
    z = (np.abs(p - BENFORD) - 1 / (2 * n)) / np.sqrt(BENFORD * (1 - BENFORD) / n)
    return np.where(p > BENFORD, z, 0.0)


def selection(b) -> np.ndarray:
    """The guide's selection over the whole year: the manual entries of every testable preparer whose
    leading digit is over-represented in that preparer's population."""
    _acct, cents = first_lines(b)
    tested = b.e["manual"] & (cents >= 1000)
    digit = _first_digit_of(cents)
    prep = preparer_codes(b) + 1
    counts = np.bincount(prep[tested] * 10 + digit[tested], minlength=(int(prep.max()) + 1) * 10)
    counts = counts.reshape(-1, 10)[:, 1:]
    hot = np.zeros((len(counts), 10), dtype=bool)
    for u in np.flatnonzero(counts.sum(axis=1) >= MIN_TEST):
        hot[u, 1:] = digit_z(counts[u], int(counts[u].sum())) > Z_SELECT
    return tested & hot[prep, digit]


def rule_hits(b) -> np.ndarray:
    """What a correct agent vouches (the guide's selection)."""
    return selection(b)


def _planted_counts(n_defects: int, n_decoys: int, size: int) -> tuple[int, int]:
    """(defects, decoys) for a selection of ``size``: the knob counts scaled together (none when both are 0)."""
    total = n_defects + n_decoys
    if total <= 0:
        return 0, 0
    k = int(round(n_defects * size / total))
    if n_defects and not k:
        k = 1
    if n_decoys and k == size:
        k -= 1
    return k, size - k


def _scheme_size(base4: int, n: int, s0: int) -> int:
    """The smallest selection of at least ``s0`` that puts a clerk's digit 4 a full point above the
    selection threshold: ``s`` of the clerk's ``n`` tested entries moved to digit 4 (beside the ``base4``
    already there), at most ``n``. Digit 4's z-statistic depends only on its own count, so every
    candidate size is tested at once."""
    if s0 >= n:
        return s0
    s = np.arange(s0, n)
    counts = np.zeros((len(s), 9))
    counts[:, 3] = base4 + s
    ok = np.flatnonzero(digit_z(counts, n)[:, 3] >= Z_SELECT + 1)
    return int(s[ok[0]]) if len(ok) else n


def plant(b) -> None:
    rng = b.rng
    e = b.e
    _guide(b)
    _review_policy(b)
    _acct, cents = first_lines(b)
    total = b.n_defects + b.n_decoys
    pay = _payments(b)
    tested = e["manual"] & (cents >= 1000)
    digit = _first_digit_of(cents)
    # a vendor that bills one fixed sum every period (rent, subscriptions, premiums): an invoice of another
    # sum would stand out against the vendor's other months whatever it bills, so none is moved
    m = b.books.master
    vcat = m.vendor_category[b.books.docs.partner[e["books_doc"]]]
    fixed_fee = (e["vendor_id"] != "") & np.isin(
        vcat, [i for i, c in enumerate(md.CATEGORIES) if c.flow in ("recurring", "prepaid")])
    # the pool: the clerk's manual two-line vendor invoices without a goods receipt, USD 500-3,999.99 and
    # not beginning with 4, of a vendor billing by the job, paid in one payment or not at all in the year
    pools, sizes = {}, {}
    for u in SCHEME_USERS:
        g = tested & (e["preparer"] == u)
        n = int(g.sum())
        pools[u] = g & (e["doc_code"] == "VN") & (e["n_lines"] == 2) & (cents >= 500_00) & (cents < 4_000_00) \
            & (digit != 4) & (pay != -2) & ~fixed_fee
        base4 = int((g & (digit == 4)).sum())
        sizes[u] = _scheme_size(base4, n, max(total, MIN_SELECTED)) if n >= MIN_TEST else 10**9
    fit = [u for u in SCHEME_USERS if int(pools[u].sum()) >= sizes[u]]
    if total and not fit:
        need = min(sizes.values())
        raise ConfigError(
            f"impossible knobs for JE-13: no AP clerk keys {MIN_TEST} manual entries in the year of {b.n} entries; "
            "raise n_entries" if need >= 10**9 else
            f"impossible knobs for JE-13: the scheme needs {need} of one AP clerk's invoices but the year of {b.n} "
            f"entries has at most {max(int(p.sum()) for p in pools.values())}; raise n_entries")
    planted: list[tuple[int, bool, int, int]] = []
    if total:
        user = str(rng.choice(fit))
        K, D = _planted_counts(b.n_defects, b.n_decoys, sizes[user])
        labels = rng.permutation(np.array([True] * K + [False] * D, dtype=bool))
        cash = b.books.period_end_balances()[:12, 0].astype(np.int64)  # cash is the chart's first account
        month = e["post_date"].astype("datetime64[M]").astype(np.int64) % 12
        pool = np.flatnonzero(pools[user])
        for bad in labels:
            cand = pool[~b.used[pool]]
            # the amount keyed is drawn before the label: 4,500.00-4,999.99, never a whole hundred
            keyed = int(rng.integers(4_500_00, 5_000_00))
            keyed += 17 if keyed % 100_00 == 0 else 0
            if not bad:
                cand = cand[cash_covers(cash, month, pay[cand], keyed - cents[cand])]
            idx = int(b.pick(1, among=cand, what=f"invoices of {user} to move below the review threshold")[0])
            true = int(cents[idx])
            e["debit_cents"][idx] = e["credit_cents"][idx] = keyed
            if not bad:
                pay_more(b, int(pay[idx]), keyed - true, cash, month)
            planted.append((idx, bool(bad), true, keyed))
        for idx, bad, true, keyed in planted:
            if bad:
                doc = b.source_document(idx)
                b.add_defect(idx, "invoice_keyed_above_billed", CODE, [doc, "master:users"], keyed - true,
                             facts=[keyed / 100, true / 100, f"{{D:{doc}}}", user])
            else:
                doc = billed_document(b, idx, true, keyed)
                b.add_decoy(idx, "invoice_agrees", [doc], facts=[keyed / 100, f"{{D:{doc}}}"])
    # every other selected entry's source document, and a few ordinary manual entries'
    hits = selection(b)
    hits[np.array([p[0] for p in planted], dtype=np.int64)] = False
    ordinary = np.flatnonzero(e["manual"] & ~hits & ~b.used)
    extra = rng.choice(ordinary, size=min(len(ordinary), int(rng.integers(3, 7))), replace=False)
    for idx in np.sort(np.concatenate([np.flatnonzero(hits), extra])):
        b.source_document(int(idx))


# ---------------------------------------------------------------------------- strategies
def _first_digit(amount: float) -> int:
    return int(f"{abs(amount):.2f}".lstrip("0.")[0])


def _counts(test: dict) -> np.ndarray | None:
    dist = test.get("distribution")
    return None if not dist else np.array([dist[str(d)]["count"] for d in range(1, 10)])


def _local_test(amounts: list[float]) -> dict:
    """The first-digit test done by hand from ledger rows (when ``compute_stats`` is withheld)."""
    amounts = [a for a in amounts if a >= 10]
    n = len(amounts)
    if n < MIN_TEST:
        return {"n": n, "message": f"population of {n} entries is too small for a digit test"}
    obs = [_first_digit(a) for a in amounts]
    counts = [obs.count(d) for d in range(1, 10)]
    return {"n": n, "kind": "first",
            "distribution": {str(d): {"count": c, "expected": float(BENFORD[d - 1])}
                             for d, c in zip(range(1, 10), counts)}}


def _digit_stats(kit: Kit, filters: list[dict], amounts: list[float]):
    """A first-digit test through ``compute_stats`` when the tool is there, else computed by hand."""
    if kit.has("compute_stats"):
        obs = yield from kit.call("compute_stats", filters=filters, digits="first", top_z=0)
        return obs.get("digit_test") or {"n": obs.get("n", 0), "message": obs.get("message", "")}
    return _local_test(amounts)


_MANUAL = {"column": "source", "op": "eq", "value": "manual"}


def _select(kit: Kit):
    """The guide's selection: per testable preparer, the entries beginning with an over-represented digit.
    Returns (manual rows by preparer, population test, [(user, digit, z, n, rows)])."""
    rows = yield from kit.ledger(filters=[_MANUAL, {"column": "line_no", "op": "eq", "value": 1}],
                                 columns=["entry_id", "debit", "preparer", "reference"])
    by_user: dict[str, list[dict]] = {}
    for r in rows:
        by_user.setdefault(r["preparer"], []).append(r)
    pop = yield from _digit_stats(kit, [_MANUAL], [r["debit"] for r in rows])
    found = []
    for user in sorted(u for u, rs in by_user.items() if sum(r["debit"] >= 10 for r in rs) >= MIN_TEST):
        test = yield from _digit_stats(kit, [{"column": "preparer", "op": "eq", "value": user}, _MANUAL],
                                       [r["debit"] for r in by_user[user]])
        counts = _counts(test)
        if counts is None:
            continue
        n = int(test["n"])
        z = digit_z(counts, n)
        for d in np.flatnonzero(z > Z_SELECT) + 1:
            sel = [r for r in by_user[user] if r["debit"] >= 10 and _first_digit(r["debit"]) == d]
            found.append((user, int(d), float(z[d - 1]), n, sel))
    found.sort(key=lambda f: -f[2])
    return by_user, pop, found


def naive(kit: Kit):
    """Runs the digit tests and flags every entry behind an over-represented digit, without vouching."""
    _by_user, _pop, found = yield from _select(kit)
    n = 0
    for user, d, z, size, sel in found:
        for r in sel:
            if kit.calls_left <= 1:
                break
            yield from kit.flag(r["entry_id"], CODE, [],
                                f"Entry {r['entry_id']}: {user}'s leading digit {d} is over-represented (z {z:.1f} "
                                f"over {size} entries).")
            n += 1
    yield from kit.submit(f"Flagged {n} entries behind over-represented leading digits.")


_REF = re.compile(r"\b([A-Z]{2}-\d{5,})\b")
_USD = re.compile(r"USD (-?[\d,]+\.\d\d)")


def _traced(pop: dict, found: list) -> str:
    """The working-paper note on the population test (the guide's baseline): each over-represented
    digit of the population and the preparers whose own tests show it, or that none does."""
    counts = _counts(pop)
    if counts is None:
        return ""
    notes = []
    for d in np.flatnonzero(digit_z(counts, int(pop["n"])) > Z_SELECT) + 1:
        users = [u for u, dd, _z, _n, _s in found if dd == d]
        notes.append(f"digit {d} over-represented in the population, "
                     + (f"traced to {', '.join(users)}" if users else "shown by no preparer's own test: not a selection"))
    return "; " + "; ".join(notes) if notes else "; the population conforms digit by digit"


def careful(kit: Kit):
    """Tests each preparer's leading digits, selects the entries behind every over-represented digit and
    vouches each to its source document: flags what is keyed above the document, clears what agrees."""
    yield from kit.master("users")
    by_user, pop, found = yield from _select(kit)
    if not found:
        yield from kit.submit(f"Population first-digit MAD {pop.get('mad')}{_traced(pop, found)}; no preparer's "
                              "leading digit is over-represented; nothing selected.")
        return
    support = {}
    for d in (yield from kit.documents()):
        m = _REF.search(d["title"])
        if m:
            support.setdefault(m.group(1), d["doc_id"])
    n_flag = n_clear = 0
    for user, d, z, size, sel in found:
        why = (f"{user}'s manual entries (n={size}) begin with {d} more often than Benford's law expects "
               f"(z {z:.1f} above the guide's {Z_SELECT:g}; population MAD {pop.get('mad')})")
        for r in sel:
            if kit.calls_left <= 3:
                break
            doc = support.get(r["reference"])
            if doc is None:
                yield from kit.flag(r["entry_id"], CODE, ["master:users"],
                                    f"Selected: {why}. No source document for {r['reference']} in the pack; "
                                    f"the entry of USD {r['debit']:,.2f} cannot be vouched.")
                n_flag += 1
                continue
            body = (yield from kit.open(doc)).get("body", "")
            m = re.search(r"^Amount: USD (-?[\d,]+\.\d\d)", body, re.M)
            figures = [float(x.replace(",", "")) for x in _USD.findall(body)]
            if any(abs(f - r["debit"]) < 0.005 for f in figures):
                yield from kit.clear(r["entry_id"], [doc],
                                     f"Selected: {why}. Vouched to {doc}, which is for USD {r['debit']:,.2f}, the "
                                     f"amount keyed.")
                n_clear += 1
                continue
            billed = float(m.group(1).replace(",", "")) if m else (figures[-1] if figures else 0.0)
            yield from kit.flag(
                r["entry_id"], CODE, [doc, "master:users"],
                f"Selected: {why}. Vouched to {doc}: the document is for USD {billed:,.2f} but {user} keyed USD "
                f"{r['debit']:,.2f}, overstating it by {r['debit'] - billed:,.2f}, just under the clerk's "
                f"review threshold.")
            n_flag += 1
    yield from kit.submit(
        f"Population first-digit MAD {pop.get('mad')}{_traced(pop, found)}. Selected the entries behind "
        + "; ".join(f"{u}'s digit {d} (z {z:.1f})" for u, d, z, _n, _s in found)
        + f"; vouched them to their source documents: {n_flag} not supported (flagged), {n_clear} agree (cleared).")
