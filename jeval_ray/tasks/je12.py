"""JE-12 (L3): population outliers in the manual journal entries, selected and vouched.

The support pack holds the engagement's analytics plan, which fixes the method: the population is
the manual journal entries (interface and batch postings are covered by the IT controls work);
an entry belongs to the population of the account on its first line and is measured by that
line's debit (what ``compute_stats`` measures); its robust z-score is
``(amount - median) / (1.4826 × MAD)``. Two tests select entries:

* amount test: robust z above ``AMOUNT_Z`` (8: accounting amounts are heavy-tailed) in an account
  with at least ``MIN_POP`` entries;
* user-account flow test: the entry is the only one its preparer (who posted at least
  ``MIN_USER`` other manual entries) posted to that account, and its robust z is above
  ``FLOW_Z`` (3).

An outlier is a reason to select and vouch, not a finding (the plan's step 7): every entry the
tests select has its source document in the pack (the books' own document behind the entry: the
vendor invoice, the accrual, the allowance review, the top-side adjustment, the tax return …),
and so do a few ordinary manual entries, so the documents alone do not list the selection. Vouching
compares the entry's first-line debit and account with the document's figures and account.

Planted, both from one pool (manual two-line vendor invoices without a goods receipt and month-end
accruals, paid in the year by one payment or not at all, already more than one MAD above their
account's median: moving them further up leaves every median and MAD where the books put them);
each candidate's keying slip is fixed before its label is drawn, so defects and decoys share one
surface. A slip is one digit of the dollars typed twice (3,638.76 as 36,638.76), the first two
digits swapped (6,338.76) or the leading digit mistyped higher (8,638.76); the slip chosen is the
smallest that puts the entry above robust z 8.5 (``PLANT_Z``) within its approver's limit. When a
seed's default draw of counts exceeds what the year holds, fewer are planted (explicit knob counts
raise ``ConfigError`` instead). Nothing is planted for the flow test (over seeds 0-49 it selects no
entry the amount test does not).

* defect ``keying_error`` (criteria ``OUTLIER``): the entry was keyed with the slip. Its source
  document in the pack (the books' own: the vendor invoice or the accrual) shows the true amount
  and the same account. The invoice's payment run paid the true amount, so accounts payable keeps
  the excess open; an accrual's automatic reversal on the next day mirrors the amount keyed (so
  the month, and for December the year, is overstated). Decisive facts: the document, its amount
  and the amount keyed; misstatement: their difference.
* decoy ``outlier_vouched_amount``: the same surface, but the amount is genuine: the document shows
  the amount and account keyed, and the invoice's payment (when made in the year) or the accrual's
  reversal carries the same amount; a decoy is drawn only where the company's month-end cash
  covers the larger payment.
  Decisive facts: the document, its amount and its account. ``near_miss`` has no effect: decoys
  sit at the defects' z-scores by design.

Unplanted look-alikes: the plan's tests also select genuine manual entries of the books (a large
top-side adjustment, an allowance review, a tax return, a matched invoice, an accrual), whose
source documents agree with them; a careful auditor vouches and clears them. Over seeds 0-49 at
the default size the tests select 10.2 such entries per world (5 to 16; 47 % of everything they
select), besides 11.3 planted ones; flagging everything the tests select reports them all.

The default world is a year of about 2,000 entries (``default_knobs``): the minimum year has too
few manual invoices and accruals above their account's median for the slips.

Required evidence: a population baseline (``compute_stats``, scored by ``baseline_before_claim``),
the entry's source document and the analytics plan; a decoy is cleared by its source document and
the plan.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import chart
from jeval_ray.builder import Entries, WorldBuilder
from jeval_ray.builder._base import _CODES
from jeval_ray.builder.spec import Knobs, key, spec
from jeval_ray.protocol.kit import Kit, Step
from jeval_ray.tasks.taskkit import (INT, MONEY, TOKEN, Disposition, Form, SurfaceRule, Task, clear, flag, review,
                                     roles, surface_naive, tally)

SPEC = spec(
    "JE-12",
    "L3",
    'Population outliers',
    step_budget=120,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective='Apply the analytics plan in the support pack to the manual journal entries: select the entries whose amount or user-account flow is far outside their population and vouch each selected entry to its source document; report the selected entries their support shows to be misstated. Establish a population baseline before any claim that something is unusual.',
    defect='selected outlier that vouching shows to be misstated (an invoice keyed at another amount than the vendor billed)',
    decoys='selected outliers whose source document agrees with the entry (planted and genuine)',
    required_evidence="a population baseline (compute_stats) before any 'unusual' claim; the entry's source document; the analytics plan",
    sources=('general_ledger', 'population_statistics', 'source_documents', 'analytics_plan'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OUTLIER', 'an outlier (amount or user-account flow) whose support shows it misstated',
         'the amount keyed less the amount its support shows'),
    ),
    withheld_variant=('compute_stats',),
    # a year of about 2,000 entries: the manual expense populations must hold enough vendor invoices and
    # accruals above their median for the slips planted (the minimum year has too few)
    default_knobs=Knobs(n_entries=2000),
    available=True,
)

KEY_RATIONALE = (
    key("defect", "keying_error",
        evidence="the entry's source document in the pack (the vendor invoice or the month-end accrual), found by "
                 "the entry's reference, and the analytics plan whose amount test selects the entry",
        facts="the document's amount; the amount keyed (the same figure with one keying slip: a digit typed twice, "
              "the first two digits swapped or the first mistyped); the same GL account on both; the entry's robust "
              "z in its account's manual population above 8",
        conclusion="Selected by the amount test and vouched: the source document is for USD x but the entry was "
                   "keyed as USD y; the expense and accounts payable (or accrued liabilities) are overstated by "
                   "y - x, a keying error the approval did not catch. Propose the correction and extend the test "
                   "of the input controls.",
        standard="AS 2401.58 and .61 (examining journal entries and the characteristics of those selected); "
                 "ISA 240.32(a); AS 1105.15 (inspection of documents)"),
    key("decoy", "outlier_vouched_amount",
        evidence="the entry's source document in the pack (the vendor invoice or the month-end accrual), and the "
                 "analytics plan",
        facts="the document's amount and GL account equal the entry's first-line debit and account (and the "
              "invoice's payment, or the accrual's reversal, carries the same amount)",
        conclusion="Selected by the amount test; vouched to the source document, which supports the amount and "
                   "the account posted: a genuine large item, no misstatement; cleared.",
        standard="AS 2401.58 and .61; ISA 240.32(a); AS 1105.15"),
)

CODE = "OUTLIER"
SCALE = 1.4826  # MAD -> standard deviation of a normal population
AMOUNT_Z = 8.0
FLOW_Z = 3.0
MIN_POP = 8
MIN_USER = 10
#: the robust z of a planted entry's keyed amount is above this (a margin over the test for the rounding of
#: the medians and MADs compute_stats shows)
PLANT_Z = AMOUNT_Z + 0.5
PLAN_TITLE = "Journal entry analytics plan FY2025 - population outlier tests"
#: what a keying slip is planted in: vendor invoices without a goods receipt, month-end accruals
_POOL = ("VN", "AC")
_CASH = chart.CODE["1000"]


# ---------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Plan:
    """The analytics plan's limits: the amount test's robust z and least population, the flow test's
    least number of a preparer's other entries and its robust z."""
    amount_z: int
    min_pop: int
    min_user: int
    flow_z: int


PLAN = Form(Plan, (
    "Prepared by the audit senior; reviewed by the engagement manager.\n"
    "1. Populations. The tests cover the manual journal entries (source 'manual'); interface and batch "
    "postings are covered by the IT general controls work. Each manual entry belongs to the population of "
    "the account on its first line (line 1). The measure is that line's debit amount.\n"
    "2. Baseline. For every population compute the count, the median and the median absolute deviation "
    "(MAD). The robust z-score of an entry is (amount - median) / (1.4826 x MAD). The mean and standard "
    "deviation are not used: they are distorted by the very amounts under test. Accounting amounts are "
    "heavy-tailed, so the amount test's limit is well above the 3 of a normal population.\n"
    "3. Amount test. An entry whose robust z-score exceeds {amount_z} within a population of at least "
    "{min_pop} entries is outside its population and is selected.\n"
    "4. User-account flow test. For each preparer (user id) with at least {min_user} other manual entries in "
    "the period, an entry that is the only one the preparer posted to that account in the period is selected "
    "when its robust z-score in the account's population exceeds {flow_z}.\n"
    "5. Large amounts are not reportable by themselves: an account's population can hold entries of very "
    "different sizes (a quarterly top-side adjustment, a tax return, an annual service invoice).\n"
    "6. Document the baseline (median, MAD, robust z) for every entry selected.\n"
    "7. An outlier is a reason to select an entry, not a finding. Every entry selected by test 3 or 4 is "
    "vouched to its source document, which the client has placed in the PBC pack (the document number is "
    "the entry's reference): the first-line amount must be a figure of the document and the GL account "
    "coded on the document, where it names one, must be the account posted. Selected entries that agree are "
    "cleared; entries that disagree (an amount keyed wrongly, a cost posted to another account than the one "
    "coded on the document) or have no source document are reported."), amount_z=INT, min_pop=INT, min_user=INT,
    flow_z=INT)


@dataclass(frozen=True)
class Amount:
    """A books source document's amount line (an invoice without a goods receipt, an accrual, a return ...)."""
    amount: int


@dataclass(frozen=True)
class MatchedAmounts:
    """A books matched vendor invoice's amounts line."""
    goods: int
    variance: int
    total: int


@dataclass(frozen=True)
class CodedTo:
    """A books source document's account line (where its type names the account)."""
    account: str


#: lines of the books' own source documents (``jeval_ray.books.wording``), found with ``search``; a
#: document's first line is its title, so each of these starts after a line break
AMOUNT = Form(Amount, "\nAmount: USD {amount}", amount=MONEY)
MATCHED_AMOUNTS = Form(MatchedAmounts, "\nGoods received value at order price: USD {goods}; price difference: USD "
                       "{variance}; invoice total: USD {total}", goods=MONEY, variance=MONEY, total=MONEY)
CODED_TO = Form(CodedTo, "\nAccount: {account} ", account=TOKEN)


def _plan(b: WorldBuilder) -> int:
    body = PLAN.render(Plan(int(AMOUNT_Z), MIN_POP, MIN_USER, int(FLOW_Z)))
    return b.add_document("memo", PLAN_TITLE, body, "2025-11-14")


def billed_document(b: WorldBuilder, idx: int, books_cents: int, billed_cents: int) -> int:
    """The vendor invoice behind entry ``idx`` as billed: the books' document with its amount line
    written for ``billed_cents``."""
    r = b.books.document(int(b.cols.books_doc[idx]))
    old, new = AMOUNT.render(Amount(books_cents)), AMOUNT.render(Amount(billed_cents))
    assert old in r["body"], r["body"]
    return b.add_document(r["doc_type"], r["title"], r["body"].replace(old, new), r["date"])


# ---------------------------------------------------------------------------- the population
def first_lines(b: WorldBuilder) -> tuple[np.ndarray, np.ndarray]:
    """(account index into the chart, debit cents) of every entry's first line as the listing will show it.

    Nothing here changes an entry's accounts, and a planted entry is always a two-line entry whose
    first line is its main debit line, so ``build`` moves that line by the change of its debit total;
    every other entry keeps the books' first line."""
    first = b._line_no == 1
    acct = b._line_account[first].astype(np.int64)
    val = b._line_value[first]
    cents = np.where(val > 0, val, 0).astype(np.int64)
    now = b.cols.debit_cents
    changed = now != Entries(b._orig).debit_cents
    cents[changed] = now[changed]
    return acct, cents


def preparer_codes(b: WorldBuilder) -> np.ndarray:
    """Every entry's preparer as an integer (the books' user index; nothing here changes a preparer)."""
    return b.books.docs.preparer[b.cols.books_doc].astype(np.int64)


def _stats(acct: np.ndarray, cents: np.ndarray,
           manual: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[int, float, float]]]:
    """Per-entry (median, scale) of its first-line account's manual population in USD (scale 0 where the
    population is too small or has no spread), and account code -> (n, median, MAD)."""
    na = int(acct.max()) + 1 if len(acct) else 1
    x = cents / 100.0
    med = np.zeros(na)
    scale = np.zeros(na)
    out = {}
    m_acct = acct[manual]
    order = np.argsort(m_acct, kind="stable")
    xs = x[manual][order]
    bounds = np.searchsorted(m_acct[order], np.arange(na + 1))
    for k in range(na):
        v = xs[bounds[k]:bounds[k + 1]]
        if not len(v):
            continue
        md = float(np.median(v))
        mad = float(np.median(np.abs(v - md)))
        out[str(_CODES[k])] = (len(v), md, mad)
        med[k] = md
        scale[k] = SCALE * mad if len(v) >= MIN_POP else 0.0
    return med[acct], scale[acct], out


def robust_z(b: WorldBuilder) -> np.ndarray:
    """Every manual entry's robust z-score in its first-line account's population (0 where not testable)."""
    acct, cents = first_lines(b)
    manual = b.cols.manual
    med, scale, _ = _stats(acct, cents, manual)
    ok = manual & (scale > 0)
    z = np.zeros(b.n)
    z[ok] = (cents[ok] / 100.0 - med[ok]) / scale[ok]
    return z


def _flow_single(b: WorldBuilder) -> np.ndarray:
    """Manual entries that are their preparer's only manual posting to the account, by a preparer with
    at least ``MIN_USER`` other manual entries."""
    acct, _cents = first_lines(b)
    manual = b.cols.manual
    p = preparer_codes(b) + 1  # -1 (no preparer) becomes 0
    na = int(acct.max()) + 1
    pair = p * na + acct
    pair_n = np.bincount(pair[manual], minlength=int(pair.max()) + 1)[pair]
    user_n = np.bincount(p[manual], minlength=int(p.max()) + 1)[p]
    return manual & (pair_n == 1) & (user_n - 1 >= MIN_USER)


def rule_hits(b: WorldBuilder) -> np.ndarray:
    """The analytics plan's two tests over the whole year (the entries a correct agent vouches)."""
    z = robust_z(b)
    return (z > AMOUNT_Z) | (_flow_single(b) & (z > FLOW_Z))


# ---------------------------------------------------------------------------- keying slips, payments, reversals
def _slips(cents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Three keying slips of each amount (rows): one digit of the whole dollars typed twice
    (3,638.76 -> 36,638.76), the first two digits swapped (3,638.76 -> 6,338.76) and the leading
    digit mistyped as a higher one (3,638.76 -> 8,638.76); the cents are kept."""
    dollars, c = np.divmod(cents.astype(np.int64), 100)
    ndig = np.floor(np.log10(np.maximum(dollars, 1))).astype(np.int64) + 1
    pos = np.floor(rng.random(len(cents)) * ndig).astype(np.int64)  # the digit typed twice, from the left
    tail = 10 ** (ndig - pos - 1)
    head = dollars // tail
    doubled = (head * 10 + head % 10) * tail + dollars % tail
    top = 10 ** (ndig - 1)
    d1, rest = np.divmod(dollars, top)
    d2 = rest // np.maximum(top // 10, 1)
    swapped = np.where(ndig >= 2, d2 * top + d1 * (top // 10) + rest % np.maximum(top // 10, 1), dollars)
    higher = d1 + 1 + np.floor(rng.random(len(cents)) * np.maximum(9 - d1, 0)).astype(np.int64)
    mistyped = np.minimum(higher, 9) * top + rest
    return np.vstack([doubled, swapped, mistyped]) * 100 + c


def _payments(b: WorldBuilder) -> np.ndarray:
    """Per entry: the entry index of the one payment in the year that pays its vendor invoice in full,
    -1 when nothing pays it in the year, -2 when it is paid otherwise (in parts, or in part)."""
    d, c = b.books.docs, b.cols
    vp = np.flatnonzero(c.doc_code == "VP")
    vdoc = c.books_doc[vp]
    par = d.parent[vdoc]
    has = par >= 0
    n_pay = np.bincount(par[has], minlength=len(d))
    full = has & (d.amount[vdoc] == d.amount[np.maximum(par, 0)]) & (n_pay[np.maximum(par, 0)] == 1)
    pay_of_doc = np.where(n_pay > 0, -2, -1).astype(np.int64)
    pay_of_doc[par[full]] = vp[full]
    return pay_of_doc[c.books_doc]


def cash_covers(cash: np.ndarray, month: np.ndarray, pay: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """Whether each payment (entry index, -1 for none) can grow by ``extra`` cents with every later
    month-end cash balance (``cash``, twelve months) staying positive."""
    low = np.minimum.accumulate(cash[::-1])[::-1]  # the lowest month-end cash from each month on
    return (pay < 0) | (low[month[np.maximum(pay, 0)]] - extra >= 0)


def pay_more(b: WorldBuilder, pay: int, extra: int, cash: np.ndarray, month: np.ndarray) -> None:
    """The invoice's one payment (entry ``pay``; none when -1) pays ``extra`` cents more; ``cash`` follows."""
    if pay < 0:
        return
    b.cols.debit_cents[pay] += extra
    b.cols.credit_cents[pay] += extra
    cash[month[pay]:] -= extra
    b.used[pay] = True


def _reversals(b: WorldBuilder) -> np.ndarray:
    """Per entry: the entry index of the reversal of its accrual in the year, else -1."""
    d, c = b.books.docs, b.cols
    rv = np.flatnonzero(c.doc_code == "RV")
    par = d.parent[c.books_doc[rv]]
    rev_of_doc = np.full(len(d), -1, dtype=np.int64)
    rev_of_doc[par[par >= 0]] = rv[par >= 0]
    return rev_of_doc[c.books_doc]


# ---------------------------------------------------------------------------- planting
def plant(b: WorldBuilder) -> None:
    """State the analytics plan; key a slip into manual invoices and accruals drawn from one pool
    (defects: the document shows the true amount; decoys: the document is billed as keyed); add the
    source documents of everything the plan's tests select and of a few ordinary manual entries."""
    plan = _plan(b)
    b.claim("JE-12", documents=[plan])
    cents, keyed, pool = _slipped_pool(b)
    planted = _plant_slips(b, cents, keyed, pool)
    for idx, bad in planted:
        true, posted = int(cents[idx]), int(b.cols.debit_cents[idx])
        if bad:
            doc = b.source_document(idx)
            b.add_defect(idx, "keying_error", CODE, [doc, plan], posted - true,
                         facts=[f"{{D:{doc}}}", true / 100, posted / 100])
        else:
            doc = billed_document(b, idx, true, posted)
            b.add_decoy(idx, "outlier_vouched_amount", [doc, plan],
                        facts=[f"{{D:{doc}}}", posted / 100, str(b.cols.debit_account[idx])])
        b.claim("JE-12", documents=[doc])
    # the source documents of every other entry the tests select (genuine look-alikes) and of a few
    # ordinary manual entries: the documents alone do not list the selection
    hits = rule_hits(b)
    hits[np.array([i for i, _ in planted], dtype=np.int64)] = False
    ordinary = np.flatnonzero(b.cols.manual & ~hits & ~b.used)
    extra = b.rng.choice(ordinary, size=min(len(ordinary), int(b.rng.integers(3, 7))), replace=False)
    for idx in np.sort(np.concatenate([np.flatnonzero(hits), extra])):
        b.claim("JE-12", documents=[b.source_document(int(idx))])


def _slipped_pool(b: WorldBuilder) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(every entry's first-line cents, the amount each candidate would be keyed at, the candidates):
    manual two-line vendor invoices without a goods receipt and month-end accruals, already more than
    one MAD above their account's median (a slip moves them further up, which leaves every median and
    MAD where the books put them, so the z-scores planted are exact), whose smallest slip above
    ``PLANT_Z`` their approver could still approve; an invoice paid in instalments is left alone."""
    c = b.cols
    acct, cents = first_lines(b)
    med, scale, _st = _stats(acct, cents, c.manual)
    limit = {u["user_id"]: int(round(u["approval_limit"] * 100)) for u in b.users}
    pool = (np.isin(c.doc_code, _POOL) & c.manual & (c.n_lines == 2) & (scale > 0)
            & (cents / 100.0 > med + scale / SCALE))
    slips = _slips(cents[pool], b.rng)
    appr_limit = np.array([limit.get(a, 0) for a in c.approver[pool].tolist()], dtype=np.int64)
    sc = scale[pool]
    z_slip = np.where(sc > 0, (slips / 100.0 - med[pool]) / np.where(sc > 0, sc, 1), 0.0)
    # the smallest slip that makes the entry an outlier and that its approver could still approve (a decoy's
    # payment grows by as much, and the company's cash must carry it)
    valid = (z_slip > PLANT_Z) & (slips <= appr_limit) & (slips > cents[pool])
    pick = np.argmin(np.where(valid, slips, np.iinfo(np.int64).max), axis=0)
    keyed = cents.copy()
    keyed[pool] = slips[pick, np.arange(len(pick))]
    pool[np.flatnonzero(pool)[~valid.any(axis=0)]] = False
    return cents, keyed, pool


def _plant_slips(b: WorldBuilder, cents: np.ndarray, keyed: np.ndarray, pool: np.ndarray) -> list[tuple[int, bool]]:
    """Draw the roles, then each candidate from the pool (every candidate's keyed amount is fixed
    before its role, so defects and decoys share one surface), key its slip (an accrual's reversal
    mirrors it; a decoy's payment pays it); the planted entries with their roles."""
    c = b.cols
    pay = _payments(b)
    pool &= pay != -2  # an invoice paid in instalments would need its payments split: left alone
    labels = roles(b.n_defects, b.n_decoys, b.rng)
    rev = _reversals(b)
    cash = b.books.period_end_balances()[:12, _CASH].astype(np.int64)  # the books' cash at each month end
    month = (c.post_date.astype("datetime64[M]").astype(np.int64) % 12)
    planted: list[tuple[int, bool]] = []
    for bad in labels:
        cand = pool & ~b.used
        if not bad:
            # a genuine large invoice is paid in full when its payment falls in the year: cash must cover it
            cand[np.flatnonzero(cand)[~cash_covers(cash, month, pay[cand], keyed[cand] - cents[cand])]] = False
        kinds = {k for _i, k in planted}
        if not cand.any() and b.knobs.n_defects is None and b.knobs.n_decoys is None and kinds == {True, False}:
            break  # the seed's default draw of counts exceeds what this year holds: plant fewer
        idx = int(b.pick(1, cand, what="manual vendor invoices that a keying slip makes outliers")[0])
        true, posted = int(cents[idx]), int(keyed[idx])
        c.debit_cents[idx] = c.credit_cents[idx] = posted
        changed = [idx]
        if rev[idx] >= 0:  # the next day's automatic reversal mirrors the accrual as posted
            r = int(rev[idx])
            c.debit_cents[r] = c.credit_cents[r] = posted
            b.used[r] = True
            changed.append(r)
        if not bad:
            pay_more(b, int(pay[idx]), posted - true, cash, month)
            changed += [int(pay[idx])] if pay[idx] >= 0 else []
        b.claim("JE-12", entries=changed)
        planted.append((idx, bool(bad)))
    return planted


# ---------------------------------------------------------------------------- strategies
def _find_plan(kit: Kit) -> Generator[Step, Any, str | None]:
    if kit.has("search_documents"):
        hits = (yield from kit.call("search_documents", query="robust z-score")).get("documents", [])
    else:
        hits = yield from kit.documents(doc_type="memo")
    hits = sorted(hits, key=lambda d: ("analytics plan" not in d["title"].lower(), d["doc_id"]))
    return hits[0]["doc_id"] if hits else None


def _thresholds(body: str) -> dict[str, float]:
    """The plan's limits; the firm's standard ones if the plan cannot be read."""
    p = PLAN.parse(body)
    if p is None:
        return {"amount_z": AMOUNT_Z, "min_pop": float(MIN_POP), "min_user": float(MIN_USER), "flow_z": FLOW_Z}
    return {"amount_z": float(p.amount_z), "min_pop": float(p.min_pop), "min_user": float(p.min_user),
            "flow_z": float(p.flow_z)}


def _baseline(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Median and MAD per debit account from ledger rows (when compute_stats is withheld)."""
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(r["account"], []).append(r["debit"])
    out = {}
    for a, v in by.items():
        x = np.array(v)
        med = float(np.median(x))
        out[a] = {"n": len(x), "median": round(med, 2), "mad": round(float(np.median(np.abs(x - med))), 2)}
    return out


_MANUAL = {"column": "source", "op": "eq", "value": "manual"}
#: the largest robust z-scores careful asks compute_stats for (the most it lists)
TOP_Z = 50
#: an entry the tests scored: (robust z, its preparer's only entry to the account, its ledger row, its population)
Scored = tuple[float, bool, dict[str, Any], dict[str, Any]]


def _select(kit: Kit) -> Generator[Step, Any, tuple[str | None, dict[str, float], list[str], dict[str, Scored],
                                                      Counter[str]]]:
    """The plan's selection: the per-account robust baseline of the manual entries (``compute_stats``
    first, the ledger when it is withheld) and both tests. Returns (plan id, thresholds, selected,
    scored rows, users)."""
    plan = yield from _find_plan(kit)
    body = (yield from kit.open(plan)).get("body", "") if plan else ""
    th = _thresholds(body)
    groups: dict[str, Any] = {}
    if kit.has("compute_stats"):
        # the baseline comes first: no claim about an entry before the population is measured
        st = yield from kit.call("compute_stats", filters=[_MANUAL], measure="amount", group_by="account", top_z=0)
        groups = st.get("groups", {})
    rows = yield from kit.ledger([_MANUAL, {"column": "line_no", "op": "eq", "value": 1}],
                                 ["entry_id", "account", "debit", "preparer", "reference"])
    if not groups:
        groups = _baseline(rows)
    per_user = Counter(r["preparer"] for r in rows)
    pairs = Counter((r["preparer"], r["account"]) for r in rows)
    scored: dict[str, Scored] = {}
    for r in rows:
        g = groups.get(r["account"], {})
        if g.get("n", 0) < th["min_pop"] or not g.get("mad"):
            continue
        z = (r["debit"] - g["median"]) / (SCALE * g["mad"])
        single = pairs[(r["preparer"], r["account"])] == 1 and per_user[r["preparer"]] - 1 >= th["min_user"]
        scored[r["entry_id"]] = (z, single, r, g)
    selected = sorted((eid for eid, (z, single, _r, _g) in scored.items()
                       if z > th["amount_z"] or (single and z > th["flow_z"])), key=lambda k: -scored[k][0])
    return plan, th, selected, scored, per_user


def _above(kit: Kit, th: dict[str, float], groups: dict[str, Any],
           top: list[dict[str, Any]]) -> Generator[Step, Any, list[dict[str, Any]]]:
    """The manual entries (first lines) above their account's flow-test limit, by id from the largest
    robust z-scores ``compute_stats`` lists (``top``, over every account): where the list stops above
    the limit, the accounts are split in halves and each asked again (z-scores are within an account,
    so a subset of accounts keeps them)."""
    todo = [(sorted(a for a, g in groups.items() if g.get("n", 0) >= th["min_pop"] and g.get("mad")), top)]
    ids: list[str] = []
    while todo:
        accounts, listed = todo.pop()
        if len(listed) < TOP_Z or abs(listed[-1]["z"]) < th["flow_z"] - 0.1 or len(accounts) < 2:
            ids += [t["entry_id"] for t in listed if t["z"] > th["flow_z"] - 0.1]
            continue
        for part in (accounts[: len(accounts) // 2], accounts[len(accounts) // 2:]):
            st = yield from kit.call("compute_stats", filters=[_MANUAL, {"column": "account", "op": "in", "value": part}],
                                     measure="amount", group_by="account", robust=True, top_z=TOP_Z, limit=1)
            todo.append((part, st.get("top_z_scores", [])))
    return (yield from kit.ledger([_MANUAL, {"column": "line_no", "op": "eq", "value": 1},
                                   {"column": "entry_id", "op": "in", "value": sorted(set(ids))}],
                                  ["entry_id", "account", "debit", "preparer", "reference"])) if ids else []


def _select_targeted(kit: Kit) -> Generator[Step, Any, tuple[str | None, dict[str, float], list[str],
                                                               dict[str, Scored], Counter[str]]]:
    """``_select`` as a model makes it: the per-account baseline, its largest robust z-scores and the
    preparers' counts by ``compute_stats``; only the entries above their account's flow-test limit and
    the flow-test candidates' preparers' postings to those accounts from the ledger (the whole
    population only where ``compute_stats`` is withheld)."""
    if not kit.has("compute_stats"):
        return (yield from _select(kit))
    plan = yield from _find_plan(kit)
    th = _thresholds((yield from kit.open(plan)).get("body", "") if plan else "")
    st = yield from kit.call("compute_stats", filters=[_MANUAL], measure="amount", group_by="account", robust=True,
                             top_z=TOP_Z)
    groups = st.get("groups", {})
    users = Counter({p: int(g.get("n", 0)) for p, g in (yield from kit.call(
        "compute_stats", filters=[_MANUAL], measure="amount", group_by="preparer", top_z=0)).get("groups", {}).items()})
    scored: dict[str, Scored] = {}
    for r in (yield from _above(kit, th, groups, st.get("top_z_scores", []))):
        g = groups.get(r["account"], {})
        if g.get("n", 0) >= th["min_pop"] and g.get("mad"):
            scored[r["entry_id"]] = ((r["debit"] - g["median"]) / (SCALE * g["mad"]), False, r, g)
    flow = {eid: x for eid, x in scored.items() if th["flow_z"] < x[0] <= th["amount_z"]
            and users[x[2]["preparer"]] - 1 >= th["min_user"]}
    if flow:
        posted = Counter((r["preparer"], r["account"]) for r in (yield from kit.ledger([
            _MANUAL, {"column": "line_no", "op": "eq", "value": 1},
            {"column": "preparer", "op": "in", "value": sorted({x[2]["preparer"] for x in flow.values()})},
            {"column": "account", "op": "in", "value": sorted({x[2]["account"] for x in flow.values()})}],
            ["preparer", "account"])))
        scored.update({eid: (x[0], posted[(x[2]["preparer"], x[2]["account"])] == 1, x[2], x[3])
                       for eid, x in flow.items()})
    selected = sorted((eid for eid, (z, single, _r, _g) in scored.items()
                       if z > th["amount_z"] or (single and z > th["flow_z"])), key=lambda k: -scored[k][0])
    return plan, th, selected, scored, users


def _why(sel: Scored, th: dict[str, float], users: Counter[str]) -> str:
    z, _single, r, g = sel
    base = (f"account {r['account']} population n={g['n']}, median {g['median']:,.2f}, MAD {g['mad']:,.2f}; "
            f"amount {r['debit']:,.2f} is robust z {z:.1f}")
    if z > th["amount_z"]:
        return f"{base}, above the plan's limit of {th['amount_z']:g}"
    return (f"{base}, above {th['flow_z']:g}, and it is the only entry {r['preparer']} posted to account "
            f"{r['account']} out of {users[r['preparer']]} entries")


def _outliers(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The entries the plan's two tests select, most outlying first, each with why it was selected."""
    _plan, th, selected, scored, users = yield from _select(kit)
    return {eid: {"why": _why(scored[eid], th, users)} for eid in selected}


RULE = SurfaceRule("an entry the analytics plan's amount test or user-account flow test selects", CODE, _outliers,
                   "Entry {entry_id} is an outlier: {why}.",
                   "Per-account outlier tests: {n} entries outside their population flagged.", in_order=False)
naive = surface_naive(RULE)


def _ref_in(title: str) -> str | None:
    """The first document number in a title (two capitals, a hyphen, five or more digits: ``VN-0001234``)."""
    return next((w for w in title.split() if len(w) >= 8 and w[2] == "-" and w[:2].isascii() and w[:2].isalpha()
                 and w[:2].isupper() and w[3:].isascii() and w[3:].isdigit()), None)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the plan, takes the per-account robust baseline of the manual entries, selects with both
    tests, then vouches every selected entry to its source document: flags what disagrees (or has no
    document), clears what agrees."""
    plan, th, selected, scored, users = yield from _select_targeted(kit)
    ev_plan = [plan] if plan else []
    # every document filed under a reference, in listing order: a note or memo about the entry is not its
    # source document, so the entry is vouched to the first that states an amount
    support: dict[str, list[str]] = {}
    for d in (yield from kit.documents()):
        ref = _ref_in(d["title"])
        if ref:
            support.setdefault(ref, []).append(d["doc_id"])

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        r = scored[eid][2]
        docs = support.get(r["reference"], [])
        if not docs and kit.has("search_documents"):
            hits = (yield from kit.call("search_documents", query=r["reference"])).get("documents", [])
            docs = [h["doc_id"] for h in hits if r["reference"] in h.get("title", "")]
        for doc in docs:
            body = (yield from kit.open(doc)).get("body", "")
            if MATCHED_AMOUNTS.search(body) or AMOUNT.search(body):
                return _vouch(eid, _why(scored[eid], th, users), r, doc, body, ev_plan)
        return _vouch(eid, _why(scored[eid], th, users), r, None, "", ev_plan)

    def reads(eid: str) -> list[tuple[str, dict]]:
        docs = support.get(scored[eid][2]["reference"], [])
        return [("open_document", {"doc_id": docs[0]})] if docs else []

    flags, clears = tally((yield from review(kit, selected, decide, reserve=3, reads=reads)))
    yield from kit.submit(f"Per-account robust baseline of the manual entries (plan {plan}): {len(selected)} outliers "
                          f"selected and vouched; {flags} misstated flagged, {clears} supported cleared.")


def _vouch(eid: str, why: str, r: dict[str, Any], doc: str | None, body: str, ev_plan: list[str]) -> Disposition:
    """Vouch a selected entry (its first-line row ``r``) to its source document ``doc`` reading ``body``."""
    head = f"Entry {eid} was selected as an outlier ({why})"
    if doc is None:
        return flag(eid, CODE, ev_plan, f"{head}; no source document for {r['reference']} is in the pack, so it "
                                        "cannot be vouched.")
    matched, stated, coded = MATCHED_AMOUNTS.search(body), AMOUNT.search(body), CODED_TO.search(body)
    figures = [x / 100 for x in ((matched.goods, matched.variance, matched.total) if matched else ())]
    figures += [stated.amount / 100] if stated else []
    amount = stated.amount / 100 if stated else (figures[-1] if figures else None)
    account = coded.account if coded else None
    if not any(abs(f - r["debit"]) < 0.005 for f in figures):
        return flag(eid, CODE, [doc, *ev_plan], f"{head}. Vouched to {doc}: the document shows {amount:,.2f}, but "
                    f"the entry was keyed as {r['debit']:,.2f}, a misstatement of {r['debit'] - amount:,.2f}.")
    if account is not None and account != r["account"]:
        return flag(eid, CODE, [doc, *ev_plan], f"{head}. Vouched to {doc}: the document is coded to GL account "
                    f"{account}, but the entry posted it to account {r['account']}.")
    return clear(eid, [doc, *ev_plan], f"{head}. Vouched to {doc}: the document supports the amount "
                 f"{r['debit']:,.2f}" + (f" and the GL account {account}" if account else "") + "; no misstatement.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=PLAN.template,
            decisive="the selected entry's first-line debit and account against its source document's amount and "
                     "GL account (the analytics plan's step 7), after the plan's robust z tests select it")
