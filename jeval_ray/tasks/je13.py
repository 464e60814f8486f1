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
are fewer). Two fallbacks keep every default world plantable. When neither clerk's pool holds that
many invoices (2 of seeds 40000-42999 at the default size), a clerk's whole pool is moved, up to
that size, if it holds at least ``MIN_SELECTED`` and lifts the z-statistic ``FALLBACK_MARGIN`` (0.5)
above ``Z_SELECT``; the default counts are scaled together to it (counts the knobs set are never
scaled down). When the draws run out of invoices a decoy can take (its payment, grown by the
excess, would overdraw a later month-end cash balance: 5 of those 3,000 seeds), the decoys are
drawn before the defects, on the drawn clerk and then on the other. A year where neither works
raises a ``ConfigError`` stating what the scheme needs of each clerk and what the clerk has. Each moved
entry's new amount is drawn before it is made a defect or a decoy, so the two look the same on the
listing:

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

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import Knobs, key, spec
from jeval_ray.errors import ConfigError
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.je12 import _payments, billed_document, cash_covers, first_lines, pay_more, preparer_codes
from jeval_ray.tasks.taskkit import (DOC_NUMBER, INT, MONEY, Disposition, Form, SurfaceRule, Task, clear, flag, review,
                                     surface_naive, tally)

SPEC = spec(
    "JE-13",
    "L4",
    'Digit-pattern anomalies',
    step_budget=230,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective="Run the first-digit (Benford) test on the manual journal entries, for the population and per preparer, as the digit-test guide in the support pack prescribes; select the entries the guide's selection rule calls for, vouch them to their source documents and flag those the support does not bear out.",
    defect="an entry selected by a preparer's over-represented leading digit that its source document does not support",
    decoys='selected entries that vouch clean (planted and genuine)',
    required_evidence="digit statistics for the preparer and the population; the selected entry's source document; master:users",
    sources=('general_ledger', 'user_master', 'digit_statistics', 'source_documents'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DIGIT_ANOMALY', "an entry selected by a digit test whose support does not bear it out",
         'the amount keyed less the amount billed'),
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
#: how far above ``Z_SELECT`` digit 4's z must reach when no clerk's pool holds the full spike
FALLBACK_MARGIN = 0.5
THRESHOLD_CENTS = 5_000_00
SCHEME_USERS = ("AKIM", "BOKAFOR")
GUIDE_TITLE = "Internal audit analytics guide - digit tests"
REVIEW_TITLE = "Manual journal entry review thresholds"
CODE = "DIGIT_ANOMALY"


@dataclass(frozen=True)
class Guide:
    """The internal-audit guide to digit tests: the smallest population tested and the selection z."""
    min_test: int
    z_select: int


@dataclass(frozen=True)
class ReviewThresholds:
    """The review-threshold policy (its thresholds are fixed: AP and AR clerks USD 5,000)."""


@dataclass(frozen=True)
class Usd:
    """An amount a books document states (``USD 1,234.56``)."""
    amount: int


@dataclass(frozen=True)
class Filed:
    """The books' document number a support-pack title files (``Vendor invoice VN-0001234 - ...``)."""
    ref: str


GUIDE = Form(Guide, (
    "Digit analysis of journal entries.\n"
    "1. Population: the manual journal entries, measured by the debit of their first line (amounts of USD 10 "
    "or more), tested per preparer (user id) and for all preparers together.\n"
    "2. Populations of fewer than {min_test} entries are too small to test; do not draw conclusions from them.\n"
    "3. First-digit test: compare the proportion of each leading digit with Benford's law. The mean absolute "
    "deviation (MAD) summarises conformity, but small populations and recurring fees make it noisy, so the "
    "selection is made digit by digit.\n"
    "4. For each digit compute z = (|observed proportion - expected proportion| - 1/(2n)) / sqrt(expected x "
    "(1 - expected) / n). A digit is over-represented when its observed proportion exceeds the expected one and "
    "z exceeds {z_select} (every preparer and every digit is tested, so the usual 1.96 would select by "
    "chance).\n"
    "5. The population test is the baseline: it shows whether the manual entries as a whole conform, not whose "
    "entries to select. A digit over-represented in the population is traced to the preparers behind it "
    "through their own tests (step 4). Entries are selected only from a preparer whose own test over-represents "
    "a digit: that preparer's entries beginning with that digit. A population excess that no preparer's own "
    "test shows selects nothing; record it in the working papers with the preparers' tests.\n"
    "6. An over-represented digit is a reason to select entries, not a finding. Vouch each selected entry to "
    "its source document in the PBC pack (the document number is the entry's reference): the amount keyed must "
    "be the amount on the document. Selected entries that agree are cleared; selected entries that disagree or "
    "have no source document are reported."), min_test=INT, z_select=INT)
REVIEW = Form(ReviewThresholds, (
    "Manual journal entries are approved before posting by an approver other than the preparer. Entries of USD "
    "5,000 or more keyed by AP or AR clerks, and entries of USD 10,000 or more keyed by GL accountants, also "
    "require review by the Accounting Manager at month end. Thresholds are reviewed annually by the Controller."))
#: every amount a books document states, and the one its ``Amount:`` line states
USD = Form(Usd, "USD {amount}", amount=MONEY)
AMOUNT = Form(Usd, "Amount: USD {amount}", amount=MONEY)
#: the reference a support-pack title files the document under
FILED = Form(Filed, "{ref}", ref=DOC_NUMBER)


def _first_digit_of(cents: np.ndarray) -> np.ndarray:
    x = cents / 100.0
    return np.clip((x / 10 ** np.floor(np.log10(np.maximum(x, 1e-9)))).astype(int), 1, 9)


def digit_z(counts: np.ndarray, n: int) -> np.ndarray:
    """Nigrini's z-statistic of each leading digit's count (0 where the digit is not over-represented)."""
    p = counts / n
    z = (np.abs(p - BENFORD) - 1 / (2 * n)) / np.sqrt(BENFORD * (1 - BENFORD) / n)
    return np.where(p > BENFORD, z, 0.0)


def selection(b: WorldBuilder) -> np.ndarray:
    """The guide's selection over the whole year: the manual entries of every testable preparer whose
    leading digit is over-represented in that preparer's population."""
    _acct, cents = first_lines(b)
    tested = b.cols.manual & (cents >= 1000)
    digit = _first_digit_of(cents)
    prep = preparer_codes(b) + 1
    counts = np.bincount(prep[tested] * 10 + digit[tested], minlength=(int(prep.max()) + 1) * 10)
    counts = counts.reshape(-1, 10)[:, 1:]
    hot = np.zeros((len(counts), 10), dtype=bool)
    for u in np.flatnonzero(counts.sum(axis=1) >= MIN_TEST):
        hot[u, 1:] = digit_z(counts[u], int(counts[u].sum())) > Z_SELECT
    return tested & hot[prep, digit]


def rule_hits(b: WorldBuilder) -> np.ndarray:
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


def _scheme_pools(b: WorldBuilder, cents: np.ndarray, pay: np.ndarray,
                  total: int) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, int]]:
    """Per scheme user: the invoices that may be moved below the threshold, how many must be (digit 4's
    z a full point above the selection threshold), and the fallback when the pool holds fewer: the
    pool's worth, up to that size, when it still lifts digit 4's z ``FALLBACK_MARGIN`` above the
    threshold with at least ``MIN_SELECTED`` entries and, when the knobs set the counts, at least
    ``n_defects + n_decoys`` (0 when it does not)."""
    c = b.cols
    tested = c.manual & (cents >= 1000)
    digit = _first_digit_of(cents)
    # a vendor that bills one fixed sum every period (rent, subscriptions, premiums): an invoice of another
    # sum would stand out against the vendor's other months whatever it bills, so none is moved
    vcat = b.books.master.vendor_category[b.books.docs.partner[c.books_doc]]
    fixed_fee = (c.vendor_id != "") & np.isin(
        vcat, [i for i, cat in enumerate(md.CATEGORIES) if cat.flow in ("recurring", "prepaid")])
    # the pool: the clerk's manual two-line vendor invoices without a goods receipt, USD 500-3,999.99 and
    # not beginning with 4, of a vendor billing by the job, paid in one payment or not at all in the year
    # default counts (drawn from the seed) may shrink to the fallback; counts the knobs set never do
    shrink = b.knobs.n_defects is None and b.knobs.n_decoys is None
    pools, sizes, fallback = {}, {}, {}
    for u in SCHEME_USERS:
        g = tested & (c.preparer == u)
        n = int(g.sum())
        pools[u] = g & (c.doc_code == "VN") & (c.n_lines == 2) & (cents >= 500_00) & (cents < 4_000_00) \
            & (digit != 4) & (pay != -2) & ~fixed_fee
        base4 = int((g & (digit == 4)).sum())
        sizes[u] = _scheme_size(base4, n, max(total, MIN_SELECTED)) if n >= MIN_TEST else 10**9
        s = min(sizes[u], int(pools[u].sum()))
        counts = np.zeros(9)
        counts[3] = base4 + s
        lifts = n >= MIN_TEST and s >= MIN_SELECTED and (shrink or s >= total) \
            and digit_z(counts, max(n, 1))[3] >= Z_SELECT + FALLBACK_MARGIN
        fallback[u] = s if lifts else 0
    return pools, sizes, fallback


Planted = list[tuple[int, bool, int, int]]


def _draw_spike(rng: np.random.Generator, pool: np.ndarray, labels: np.ndarray, used: np.ndarray, cents: np.ndarray,
                pay: np.ndarray, cash: np.ndarray, month: np.ndarray) -> Planted | None:
    """The spike's draws, one entry per label in order, changing nothing of the world: (entry, defect?,
    amount billed, amount keyed) each, or None when a label finds no invoice left (a decoy needs one whose
    payment later month-end cash can grow by the excess). ``used`` and ``cash`` are the caller's copies."""
    out: Planted = []
    for bad in labels:
        cand = pool[~used[pool]]
        # the amount keyed is drawn before the label: 4,500.00-4,999.99, never a whole hundred
        keyed = int(rng.integers(4_500_00, 5_000_00))
        keyed += 17 if keyed % 100_00 == 0 else 0
        if not bad:
            cand = cand[cash_covers(cash, month, pay[cand], keyed - cents[cand])]
        if not len(cand):
            return None
        idx = int(rng.choice(cand, size=1, replace=False)[0])
        used[idx] = True
        if not bad and pay[idx] >= 0:
            cash[month[pay[idx]]:] -= keyed - int(cents[idx])
        out.append((idx, bool(bad), int(cents[idx]), keyed))
    return out


def _spike(b: WorldBuilder, pools: dict[str, np.ndarray], sizes: dict[str, int], fallback: dict[str, int],
           cents: np.ndarray, pay: np.ndarray, cash: np.ndarray, month: np.ndarray) -> tuple[str, Planted]:
    """The scheme user and the spike's draws. A clerk whose pool holds the full size is drawn, the labels
    in random order; when the draws run out of invoices a decoy can take (its payment's later month-end
    cash too low), the decoys are drawn first, on that clerk and then on the other; when no clerk's pool
    holds the full size, the fallback size (``_scheme_pools``) is planted the same way."""
    rng = b.rng
    fit = [u for u in SCHEME_USERS if int(pools[u].sum()) >= sizes[u]]
    size = sizes
    if not fit:
        fit, size = [u for u in SCHEME_USERS if fallback[u]], fallback
    if not fit:
        raise _impossible(b, pools, sizes)
    user = str(rng.choice(fit))
    K, D = _planted_counts(b.n_defects, b.n_decoys, size[user])
    tries = [(user, rng.permutation(np.array([True] * K + [False] * D, dtype=bool)))]
    for u in [user] + [u for u in fit if u != user]:
        k, d = _planted_counts(b.n_defects, b.n_decoys, size[u])
        tries.append((u, np.array([False] * d + [True] * k, dtype=bool)))
    for u, labels in tries:
        planted = _draw_spike(rng, np.flatnonzero(pools[u]), labels, b.used.copy(), cents, pay, cash.copy(), month)
        if planted is not None:
            return u, planted
    raise ConfigError(
        f"impossible knobs for JE-13: the decoys need invoices whose one payment can grow by the amount keyed "
        f"above the invoice while every later month-end cash balance stays positive (or that are unpaid), and "
        f"{' and '.join(fit)} {'has' if len(fit) == 1 else 'have'} too few of them in the year of {b.n} entries; "
        "raise n_entries or lower n_decoys")


def _impossible(b: WorldBuilder, pools: dict[str, np.ndarray], sizes: dict[str, int]) -> ConfigError:
    """The error when no AP clerk can carry the scheme: what the scheme needs of each clerk and what the
    clerk's year holds."""
    if all(s >= 10**9 for s in sizes.values()):
        return ConfigError(f"impossible knobs for JE-13: no AP clerk keys {MIN_TEST} manual entries in the year of "
                           f"{b.n} entries (the digit test's smallest population); raise n_entries")
    needs = "; ".join(f"{sizes[u]} of {u}'s, who has {int(pools[u].sum())}" for u in SCHEME_USERS if sizes[u] < 10**9)
    return ConfigError(
        f"impossible knobs for JE-13: the scheme moves one AP clerk's invoices to just under the review threshold "
        f"until the clerk's digit 4 is over-represented (z at least {Z_SELECT + 1:g}, or {Z_SELECT + FALLBACK_MARGIN:g} "
        f"when the clerk has fewer invoices, with at least {MIN_SELECTED}), and at least n_defects + n_decoys of them, "
        f"from the clerk's manual two-line invoices of USD 500-3,999.99 of vendors billing by the job, paid in one "
        f"payment or unpaid; it needs {needs}, in the year of {b.n} entries; raise n_entries or lower "
        "n_defects/n_decoys")


def plant(b: WorldBuilder) -> None:
    """State the digit-test guide and the review thresholds; move one AP clerk's invoices to just under
    the threshold (the keyed amount drawn before the label): a defect's invoice bills the original
    amount, a decoy's the amount keyed (its payment follows); file every selected entry's source document."""
    c = b.cols
    docs = [b.add_document("policy", GUIDE_TITLE, GUIDE.render(Guide(MIN_TEST, int(Z_SELECT))), "2024-11-04"),
            b.add_document("policy", REVIEW_TITLE, REVIEW.render(ReviewThresholds()), "2024-12-02")]
    _acct, cents = first_lines(b)
    total = b.n_defects + b.n_decoys
    pay = _payments(b)
    pools, sizes, fallback = _scheme_pools(b, cents, pay, total)
    planted: Planted = []
    if total:
        cash = b.books.period_end_balances()[:12, 0].astype(np.int64)  # cash is the chart's first account
        month = c.post_date.astype("datetime64[M]").astype(np.int64) % 12
        user, planted = _spike(b, pools, sizes, fallback, cents, pay, cash, month)
        for idx, bad, true, keyed in planted:
            b.used[idx] = True
            c.debit_cents[idx] = c.credit_cents[idx] = keyed
            if not bad:
                pay_more(b, int(pay[idx]), keyed - true, cash, month)
            b.claim("JE-13", entries=[idx] + ([int(pay[idx])] if not bad and pay[idx] >= 0 else []))
        docs += _vouchers(b, planted, user)
    b.claim("JE-13", documents=docs + _support(b, planted))


def _vouchers(b: WorldBuilder, planted: list[tuple[int, bool, int, int]], user: str) -> list[int]:
    """Each planted entry's invoice and its key: the books' invoice for the original amount (a defect)
    or worded for the amount keyed (a decoy). The documents added."""
    docs = []
    for idx, bad, true, keyed in planted:
        if bad:
            doc = b.source_document(idx)
            b.add_defect(idx, "invoice_keyed_above_billed", CODE, [doc, "master:users"], keyed - true,
                         facts=[keyed / 100, true / 100, f"{{D:{doc}}}", user])
        else:
            doc = billed_document(b, idx, true, keyed)
            b.add_decoy(idx, "invoice_agrees", [doc], facts=[keyed / 100, f"{{D:{doc}}}"])
        docs.append(doc)
    return docs


def _support(b: WorldBuilder, planted: list[tuple[int, bool, int, int]]) -> list[int]:
    """The source document of every other selected entry and of a few ordinary manual entries."""
    hits = selection(b)
    hits[np.array([p[0] for p in planted], dtype=np.int64)] = False
    ordinary = np.flatnonzero(b.cols.manual & ~hits & ~b.used)
    extra = b.rng.choice(ordinary, size=min(len(ordinary), int(b.rng.integers(3, 7))), replace=False)
    return [b.source_document(int(idx)) for idx in np.sort(np.concatenate([np.flatnonzero(hits), extra]))]


# ---------------------------------------------------------------------------- strategies
Test = dict[str, Any]
#: a selection: (the preparer, the digit, its z, the preparer's tested entries, the ledger rows it selects)
Found = tuple[str, int, float, int, list[dict[str, Any]]]


def _first_digit(amount: float) -> int:
    return int(f"{abs(amount):.2f}".lstrip("0.")[0])


def _counts(test: Test) -> np.ndarray | None:
    dist = test.get("distribution")
    return None if not dist else np.array([dist[str(d)]["count"] for d in range(1, 10)])


def _local_test(amounts: list[float]) -> Test:
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


def _digit_stats(kit: Kit, filters: list[dict[str, Any]], amounts: list[float]) -> Generator[Step, Any, Test]:
    """A first-digit test through ``compute_stats`` when the tool is there, else computed by hand."""
    if kit.has("compute_stats"):
        obs = yield from kit.call("compute_stats", filters=filters, digits="first", top_z=0)
        return obs.get("digit_test") or {"n": obs.get("n", 0), "message": obs.get("message", "")}
    return _local_test(amounts)


_MANUAL = {"column": "source", "op": "eq", "value": "manual"}


def _select(kit: Kit) -> Generator[Step, Any, tuple[Test, list[Found]]]:
    """The guide's selection: per testable preparer, the entries beginning with an over-represented digit.
    Returns (the population test, [(user, digit, z, n, rows)], the largest z first)."""
    rows = yield from kit.ledger(filters=[_MANUAL, {"column": "line_no", "op": "eq", "value": 1}],
                                 columns=["entry_id", "debit", "preparer", "reference"])
    by_user: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_user.setdefault(r["preparer"], []).append(r)
    pop = yield from _digit_stats(kit, [_MANUAL], [r["debit"] for r in rows])
    found: list[Found] = []
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
    return pop, found



def _select_filtered(kit: Kit) -> Generator[Step, Any, tuple[Test, list[Found]]]:
    """``_select`` as a model works with ``compute_stats``: the preparers' entry counts and ranges
    (grouped statistics), each testable preparer's digit test, and for every over-represented digit only
    the preparer's entries that begin with it (one filtered query per power of ten in their range)."""
    if not kit.has("compute_stats"):
        return (yield from _select(kit))
    groups = (yield from kit.call("compute_stats", filters=[_MANUAL], group_by="preparer", top_z=0)).get("groups", {})
    pop = yield from _digit_stats(kit, [_MANUAL], [])
    found: list[Found] = []
    for user in sorted(u for u, g in groups.items() if g.get("n", 0) >= MIN_TEST):
        mine = [{"column": "preparer", "op": "eq", "value": user}, _MANUAL]
        counts, test = None, (yield from _digit_stats(kit, mine, []))
        if int(test.get("n", 0)) >= MIN_TEST:
            counts = _counts(test)
        if counts is None:
            continue
        z = digit_z(counts, int(test["n"]))
        top = int(np.floor(np.log10(max(float(groups[user].get("max", 10.0)), 10.0))))
        for d in np.flatnonzero(z > Z_SELECT) + 1:
            sel: list[dict[str, Any]] = []
            for k in range(1, top + 1):
                sel += yield from kit.ledger([*mine, {"column": "line_no", "op": "eq", "value": 1},
                                              {"column": "debit", "op": "ge", "value": float(d * 10 ** k)},
                                              {"column": "debit", "op": "lt", "value": float((d + 1) * 10 ** k)}],
                                             ["entry_id", "debit", "reference"])
            found.append((user, int(d), float(z[d - 1]), int(test["n"]), sorted(sel, key=lambda r: r["entry_id"])))
    found.sort(key=lambda f: -f[2])
    return pop, found

def _behind_digits(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The entries the guide selects, the largest z first, each with its preparer, digit, z and test size."""
    _pop, found = yield from _select(kit)
    return {r["entry_id"]: {**r, "user": user, "d": d, "z": z, "size": size}
            for user, d, z, size, sel in found for r in sel}


RULE = SurfaceRule("every entry behind a preparer's over-represented leading digit is an anomaly", CODE,
                   _behind_digits, "Entry {entry_id}: {user}'s leading digit {d} is over-represented (z {z:.1f} "
                   "over {size} entries).", "Flagged {issued} entries behind over-represented leading digits.",
                   in_order=False)
naive = surface_naive(RULE)


def _traced(pop: Test, found: list[Found]) -> str:
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


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Tests each preparer's leading digits, selects the entries behind every over-represented digit and
    vouches each to its source document: flags what is keyed above the document, clears what agrees."""
    yield from kit.master("users")
    pop, found = yield from _select_filtered(kit)
    if not found:
        yield from kit.submit(f"Population first-digit MAD {pop.get('mad')}{_traced(pop, found)}; no preparer's "
                              "leading digit is over-represented; nothing selected.")
        return
    # every document filed under a reference, in listing order: a note or memo about the entry is not its
    # source document, so the entry is vouched to the first that states an amount
    support: dict[str, list[str]] = {}
    for doc in (yield from kit.documents()):
        filed = FILED.search(doc["title"])
        if filed:
            support.setdefault(filed.ref, []).append(doc["doc_id"])
    items = [(f"{user}'s manual entries (n={size}) begin with {d} more often than Benford's law expects "
              f"(z {z:.1f} above the guide's {Z_SELECT:g}; population MAD {pop.get('mad')})", user, r)
             for user, d, z, size, sel in found for r in sel]

    def decide(item: tuple[str, str, dict[str, Any]]) -> Generator[Step, Any, Disposition]:
        why, user, r = item
        for doc_id in support.get(r["reference"], []):
            body = (yield from kit.open(doc_id)).get("body", "")
            if USD.search(body):
                return _vouch(why, user, r, doc_id, body)
        return _vouch(why, user, r, None, None)

    def reads(item: tuple[str, str, dict[str, Any]]) -> list[tuple[str, dict]]:
        docs = support.get(item[2]["reference"], [])
        return [("open_document", {"doc_id": docs[0]})] if docs else []

    flags, clears = tally((yield from review(kit, items, decide, reserve=3, reads=reads)))
    yield from kit.submit(
        f"Population first-digit MAD {pop.get('mad')}{_traced(pop, found)}. Selected the entries behind "
        + "; ".join(f"{u}'s digit {d} (z {z:.1f})" for u, d, z, _n, _s in found)
        + f"; vouched them to their source documents: {flags} not supported (flagged), {clears} agree (cleared).")


def _vouch(why: str, user: str, r: dict[str, Any], doc: str | None, body: str | None) -> Disposition:
    """A selected entry vouched to its source document (``None`` when the pack has none): cleared when
    the document states the amount keyed, flagged otherwise."""
    eid, keyed = r["entry_id"], r["debit"]
    if doc is None or body is None:
        return flag(eid, CODE, ["master:users"], f"Selected: {why}. No source document for {r['reference']} in the "
                                                 f"pack; the entry of USD {keyed:,.2f} cannot be vouched.")
    figures = [u.amount / 100 for u in USD.find_all(body)]
    if any(abs(f - keyed) < 0.005 for f in figures):
        return clear(eid, [doc], f"Selected: {why}. Vouched to {doc}, which is for USD {keyed:,.2f}, the amount keyed.")
    stated = AMOUNT.search(body)
    billed = stated.amount / 100 if stated else (figures[-1] if figures else 0.0)
    return flag(eid, CODE, [doc, "master:users"],
                f"Selected: {why}. Vouched to {doc}: the document is for USD {billed:,.2f} but {user} keyed USD "
                f"{keyed:,.2f}, overstating it by {keyed - billed:,.2f}, just under the clerk's review threshold.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=GUIDE.template,
            decisive="the amount keyed against the amount on the selected entry's source document (the vendor "
                     "invoice filed under its reference), the selection made by the preparer's own first-digit test "
                     "(z above the guide's threshold)")
