"""JE-12 (L3): population outliers (amounts and user-account flows), selected and vouched.

The support pack holds the engagement's analytics plan, which fixes the method: an entry's
population is every entry debiting the same account; its robust z-score is
``(amount - median) / (1.4826 × MAD)`` where MAD is the population's median absolute deviation
(``compute_stats`` reports both). Two tests select entries:

* amount test: robust z above ``AMOUNT_Z`` (6) in an account with at least ``MIN_POP`` entries;
* user-account flow test: the entry is the only one its preparer (who posted at least
  ``MIN_USER`` other entries in the period) posted to that account, and its robust z is above
  ``FLOW_Z`` (3).

An outlier is a reason to select and vouch, not a finding (the plan's step 7): every selected
entry has a support document in the pack (its vendor invoice, or its accrual workpaper) showing
the amount and the GL account coded on it; the pack also holds the (agreeing) support of a few
ordinary entries, so the documents alone do not list the selection. Every candidate is a documented entry (a vendor
invoice or an accrual); its kind is drawn first (a user-account flow about a third of the time,
else an amount outlier) and its label independently, so defects and decoys share one surface.

Planted defects (criteria ``OUTLIER``):

* ``keying_error``: an amount outlier (robust z 7.5-16) whose document shows the true amount: the
  entry was keyed with one extra digit. Decisive facts: the document, the amount it shows and the
  amount posted (misstatement: their difference).
* ``posted_to_wrong_account``: a user-account flow (a staff member's entry in an expense account
  they never otherwise post to, robust z 3.8-5.5) whose document is coded to the preparer's usual
  account: the cost was posted to the wrong account. Decisive facts: the document, the account
  coded on it and the account posted.

Decoys (``outlier_vouched_amount``, ``outlier_vouched_flow``): selected by the same tests at the
same z-scores, and vouched clean: the document agrees with the amount and the account posted.
Decisive facts: the document, the amount and the account. ``near_miss`` has no effect here: decoys
sit at the same z-scores as defects by design, so no threshold separates them.

Required evidence: a population baseline (``compute_stats``, scored by ``baseline_before_claim``),
the entry (``get_entry``), the support document and the analytics plan; a decoy is cleared by its
support document and the plan.

The base population's log-normal tails would trip the tests, so ``plant`` sanitises it: base
amounts above robust z 4 are redrawn between 1 and 3.5, and base entries that would fail the flow
test are redrawn below 2.5. Every redrawn or planted amount stays more than one MAD above its
account median, which leaves each account's median and MAD unchanged (so the planted z-scores
are exactly what the agent will compute), and the tests select exactly the planted entries.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import _MONTHS, APPROVERS, PREPARERS

SPEC = spec(
    "JE-12",
    "L3",
    'Population outliers',
    objective='Select entries whose amount or user-account flow is far outside its population and vouch them: report the selected entries their support shows to be misstated. Establish a population baseline before any claim that something is unusual.',
    defect='selected outlier that vouching shows to be misstated (amount keyed wrongly, cost posted to another account)',
    decoys='selected outliers whose support agrees with the entry',
    required_evidence="a population baseline (compute_stats) before any 'unusual' claim; the support document",
    sources=('general_ledger', 'population_statistics', 'invoices', 'accrual_workpapers'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OUTLIER', 'an outlier (amount or user-account flow) whose support shows it misstated'),
    ),
    withheld_variant=('compute_stats',),
    available=True,
)

CODE = "OUTLIER"
SCALE = 1.4826  # MAD -> standard deviation of a normal population
AMOUNT_Z = 6.0
FLOW_Z = 3.0
MIN_POP = 8
MIN_USER = 10
PLAN_TITLE = "Journal entry analytics plan FY2025 - population outlier tests"
EXPENSES = ("6200", "6300", "6400", "6600", "6700", "6900", "7000", "7100")
WHAT = {"6200": "utilities", "6300": "travel costs", "6400": "consulting fees", "6600": "maintenance",
        "6700": "marketing costs", "6900": "office supplies", "7000": "insurance", "7100": "software licences"}


def _plan(b) -> int:
    return b.add_document(
        "memo", PLAN_TITLE,
        "Prepared by the audit senior; reviewed by the engagement manager.\n"
        "1. Populations. Each journal entry belongs to the population of the account on its debit line "
        "(line 1). The measure is the entry amount (its total debit).\n"
        "2. Baseline. For every population compute the count, the median and the median absolute deviation "
        "(MAD). The robust z-score of an entry is (amount - median) / (1.4826 x MAD). The mean and standard "
        "deviation are not used: they are distorted by the very amounts under test.\n"
        f"3. Amount test. An entry whose robust z-score exceeds {AMOUNT_Z:.0f} within a population of at least "
        f"{MIN_POP} entries is outside its population and is reported.\n"
        f"4. User-account flow test. For each preparer (user id) with at least {MIN_USER} other entries in the "
        "period, an entry that is the only one the preparer posted to that account in the period is reported "
        f"when its robust z-score in the account's population exceeds {FLOW_Z:.0f}.\n"
        "5. Large amounts are not reportable by themselves. Accounts with a wide spread (payroll, customer "
        "billing and receipts, cost of sales, vendor payments) routinely carry amounts far above the ledger's "
        "typical entry; judge them against their own account's population.\n"
        "6. Document the baseline (median, MAD, robust z) for every entry selected.\n"
        "7. An outlier is a reason to select an entry, not a finding. Every entry selected by test 3 or 4 is "
        "vouched to its support document in the PBC pack (the vendor invoice or the accrual workpaper): the amount "
        "and the GL account coded on the document must agree with the entry. Selected entries that agree are "
        "cleared; entries that disagree (an amount keyed wrongly, a cost posted to another account than the one "
        "coded on the document) are reported.",
        "2025-11-14",
    )


def _codes(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, each entry's index into them): string columns compared as integers."""
    return np.unique(a, return_inverse=True)


def _stats(b, acct_codes=None) -> dict[str, tuple[int, float, float]]:
    """account -> (n, median, MAD) of entry amounts (USD) by debit account (``acct_codes``: the
    debit accounts' ``_codes`` when the caller has them)."""
    x = b.e["debit_cents"] / 100.0
    accts, inv = acct_codes or _codes(b.e["debit_account"])
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(len(accts) + 1))
    out = {}
    for k, a in enumerate(accts.tolist()):
        v = x[order[bounds[k]:bounds[k + 1]]]
        if not len(v):  # an account every entry of which was re-keyed away
            continue
        med = float(np.median(v))
        out[a] = (len(v), med, float(np.median(np.abs(v - med))))
    return out


def robust_z(b, st=None, acct_codes=None) -> np.ndarray:
    """Every entry's robust z-score in its debit account's population (0 where not testable)."""
    acct_codes = acct_codes or _codes(b.e["debit_account"])
    st = st or _stats(b, acct_codes)
    x = b.e["debit_cents"] / 100.0
    accts, inv = acct_codes
    none = (0, 0.0, 0.0)
    med = np.array([st.get(a, none)[1] for a in accts.tolist()])
    scale = np.array([SCALE * st[a][2] if st.get(a, none)[0] >= MIN_POP and st[a][2] > 0 else 0.0
                      for a in accts.tolist()])
    ok = scale[inv] > 0
    z = np.zeros(b.n)
    z[ok] = (x[ok] - med[inv][ok]) / scale[inv][ok]
    return z


def _flow_single(b, prep_codes=None, acct_codes=None) -> np.ndarray:
    """Entries that are their preparer's only posting to the account, by a preparer with >= MIN_USER others."""
    _p, p_inv = prep_codes or _codes(b.e["preparer"])
    accts, a_inv = acct_codes or _codes(b.e["debit_account"])
    pair = p_inv.astype(np.int64) * len(accts) + a_inv
    return (np.bincount(pair)[pair] == 1) & (np.bincount(p_inv)[p_inv] - 1 >= MIN_USER)


def rule_hits(b) -> np.ndarray:
    """The analytics plan's two tests over the whole slice (what a correct agent must find)."""
    z = robust_z(b)
    return (z > AMOUNT_Z) | (_flow_single(b) & (z > FLOW_Z))


def _set_amount(b, idx: int, cents: int) -> None:
    cents = int(cents)
    if cents % 10_000 == 0:  # no whole-hundred amounts (another task's red flag)
        cents += 37
    b.e["debit_cents"][idx] = cents
    b.e["credit_cents"][idx] = cents
    if b.e["manual"][idx]:
        prep = str(b.e["preparer"][idx])
        ok = [a for a in APPROVERS if a != prep and b.user(a)["approval_limit"] * 100 >= cents] or ["JWRIGHT"]
        if str(b.e["approver"][idx]) not in ok:
            b.e["approver"][idx] = ok[int(b.rng.integers(0, len(ok)))]


def _at_z(st, acct: str, z: float) -> int:
    n, med, mad = st[acct]
    return int(round((med + z * SCALE * mad) * 100))


#: templates whose entries have a support document the plan vouches to
_DOC_TEMPLATES = ("vendor_invoice", "accrual")


def plant(b) -> None:
    rng = b.rng
    e = b.e
    plan = _plan(b)
    # one surface: every candidate's kind (amount outlier, or a user-account flow about a third of
    # the time) is drawn first, its label (defect or decoy) independently; vouching decides
    n_all = b.n_defects + b.n_decoys
    labels = rng.permutation(np.array([True] * b.n_defects + [False] * b.n_decoys, dtype=bool))
    is_flow = rng.random(n_all) < 1 / 3
    planted: dict[int, tuple[str, float, bool, str]] = {}  # idx -> (kind, target z, defect?, original account)
    with_doc = np.isin(e["template"], _DOC_TEMPLATES)
    amount_labels = list(labels[~is_flow])

    # user-account flows: a staff member's entry re-keyed to an expense account they never post to
    prep_codes = _codes(e["preparer"])  # preparers never change here; accounts do, until the flows are placed
    preps, p_inv = prep_codes
    users = dict(zip(preps.tolist(), np.bincount(p_inv).tolist()))
    accts, a_inv = _codes(e["debit_account"])
    acct_pos = {a: k for k, a in enumerate(accts.tolist())}
    acct_n = Counter(dict(zip(accts.tolist(), np.bincount(a_inv).tolist())))
    by_user = {u: e["preparer"] == u for u in PREPARERS if users.get(u, 0) >= MIN_USER + 1}
    for bad in labels[is_flow]:
        options = []
        for u, is_u in by_user.items():
            mine = set(accts[np.unique(a_inv[is_u])].tolist())
            free = [a for a in EXPENSES if a not in mine and acct_n[a] + 1 >= MIN_POP]
            own = is_u & e["manual"] & with_doc & ~b.used
            if free and own.any():
                options.append((u, free, own))
        if not options:
            amount_labels.append(bool(bad))  # no user qualifies in a tiny slice: an amount outlier instead
            continue
        u, free, own = options[int(rng.integers(0, len(options)))]
        idx = int(b.pick(1, own, what=f"entries by {u}")[0])
        orig = str(e["debit_account"][idx])
        a = free[int(rng.integers(0, len(free)))]
        e["debit_account"][idx] = a
        a_inv[idx] = acct_pos[a]  # every expense account a flow may use is in the slice already
        acct_n[orig] -= 1
        acct_n[a] += 1
        if str(e["description"][idx]).startswith("Accrual "):
            # keep the accrual's wording consistent with the account it is posted to
            month = _MONTHS[int(e["post_date"][idx].astype("datetime64[M]").astype(int) % 12)]
            e["description"][idx] = f"Accrual {month} {WHAT[a]}"
        planted[idx] = ("flow", float(rng.uniform(3.8, 5.5)), bool(bad), orig)

    # amount outliers: entries with a support document in accounts with a population large enough to test
    acct_codes = (accts, a_inv)
    in_acct: Counter = Counter(str(e["debit_account"][i]) for i in planted)
    for bad in amount_labels:
        # at most a quarter of an account's entries are planted, so its median and MAD stay base-driven
        ok = [k for k, a in enumerate(accts.tolist()) if acct_n[a] >= 10 and in_acct[a] + 1 <= acct_n[a] // 4]
        idx = int(b.pick(1, np.isin(a_inv, ok) & with_doc, what="documented entries in accounts with 10+ entries")[0])
        in_acct[str(e["debit_account"][idx])] += 1
        planted[idx] = ("amount", float(rng.uniform(7.5, 16.0)), bool(bad), str(e["debit_account"][idx]))

    # Park planted amounts far above every median: the robust baseline then no longer depends on them.
    for idx in planted:
        e["debit_cents"][idx] = e["credit_cents"][idx] = 10**13
    st = _stats(b, acct_codes)
    z = robust_z(b, st, acct_codes)
    is_planted = np.zeros(b.n, bool)
    is_planted[list(planted)] = True
    # Sanitise the base: redrawn amounts stay above median + MAD, so medians and MADs do not move.
    for idx in np.flatnonzero(~is_planted & (z > 4.0)):
        _set_amount(b, int(idx), _at_z(st, str(e["debit_account"][idx]), float(rng.uniform(1.0, 3.5))))
    for idx, (_kind, target, _bad, _orig) in sorted(planted.items()):
        _set_amount(b, idx, _at_z(st, str(e["debit_account"][idx]), target))
    z = robust_z(b, st, acct_codes)
    for idx in np.flatnonzero(~is_planted & _flow_single(b, prep_codes, acct_codes) & (z > FLOW_Z - 0.5)):
        _set_amount(b, int(idx), _at_z(st, str(e["debit_account"][idx]), float(rng.uniform(1.0, 2.4))))

    vendors = {v["vendor_id"]: v["name"] for v in b.vendors}
    for idx, (kind, _t, bad, orig) in sorted(planted.items()):
        posted, acct = int(e["debit_cents"][idx]), str(e["debit_account"][idx])
        if kind == "amount" and bad:
            # the document shows the true amount; the entry was keyed with an extra digit
            # the true amount is the posted one less a digit typed in error
            true = _unkeyed(posted, rng)
            doc = _support(b, idx, vendors, true, acct)
            b.add_defect(idx, "keying_error", CODE, ["entry", doc, plan], posted - true,
                         facts=[f"{{D:{doc}}}", true / 100, posted / 100])
        elif kind == "flow" and bad:
            # the document is coded to the preparer's usual account; the entry went to another one
            doc = _support(b, idx, vendors, posted, orig)
            b.add_defect(idx, "posted_to_wrong_account", CODE, ["entry", doc, plan], posted,
                         facts=[f"{{D:{doc}}}", orig, acct])
        else:
            doc = _support(b, idx, vendors, posted, acct)
            b.add_decoy(idx, f"outlier_vouched_{kind}", [doc, plan], facts=[f"{{D:{doc}}}", posted / 100, acct])
    # the PBC pack also holds the support of a few ordinary entries (requested for other procedures),
    # so the documents alone do not list the selection
    others = np.flatnonzero(with_doc & ~b.used)
    for idx in np.sort(rng.choice(others, size=min(len(others), int(rng.integers(3, 7))), replace=False)):
        _support(b, int(idx), vendors, int(e["debit_cents"][idx]), str(e["debit_account"][idx]))


def _unkeyed(posted: int, rng) -> int:
    """A true amount from which a keying error (one extra digit in the dollars) gives ``posted``."""
    dollars, c = divmod(int(posted), 100)
    digits = str(dollars)
    if len(digits) < 2:
        return max(1, posted - 100)
    pos = int(rng.integers(1, len(digits)))
    return int(digits[:pos] + digits[pos + 1:]) * 100 + c


def _support(b, idx: int, vendors: dict, cents: int, account: str) -> int:
    """The support document of entry ``idx``: its vendor invoice or its accrual workpaper, showing
    ``cents`` and the GL account coded on it."""
    e = b.e
    rng = b.rng
    ref = str(e["reference"][idx])
    day = b.date_str(e["doc_date"][idx])
    approver = str(e["approver"][idx]) or "FNGUYEN"
    if str(e["template"][idx]) == "vendor_invoice":
        vendor = vendors.get(str(e["vendor_id"][idx]), "the vendor")
        body = (f"INVOICE {ref}\nFrom: {vendor} (vendor no. {e['vendor_id'][idx]})\n"
                f"Bill to: {b.facts['company_name']}, Accounts Payable, Columbus OH\nInvoice date: {day}\n"
                f"Invoice total: USD {cents / 100:,.2f}\n"
                f"AP coding stamp: GL account {account}, cost centre {int(rng.integers(100, 500))}, "
                f"approved for payment by {approver}.")
        return b.add_document("invoice", f"Vendor invoice {ref} - {vendor}", body, day)
    # the basis names what the coded account holds: the workpaper, not the entry, is the authority
    basis = WHAT.get(account, "costs incurred")
    body = (f"Accrual workpaper {ref}\nPeriod: {day[:7]}\nBasis: {basis} incurred in the period and not yet invoiced, "
            f"estimated from the open purchase orders and the latest supplier statements.\n"
            f"Amount accrued: USD {cents / 100:,.2f}\n"
            f"GL account: {account} (credit 2100 Accrued Liabilities)\nPrepared by {e['preparer'][idx]}; "
            f"reviewed by {approver}.")
    return b.add_document("memo", f"Accrual workpaper {ref}", body, day)


# ------------------------------------------------------------------ strategies
def _find_plan(kit: Kit):
    if kit.has("search_documents"):
        hits = (yield from kit.call("search_documents", query="robust z-score")).get("documents", [])
    else:
        hits = yield from kit.documents(doc_type="memo")
    hits = sorted(hits, key=lambda d: ("analytics plan" not in d["title"].lower(), d["doc_id"]))
    return hits[0]["doc_id"] if hits else None


def _thresholds(body: str) -> dict:
    """The plan's numbers; the defaults are the firm's standard ones if the plan cannot be read."""
    def num(pattern: str, default: float) -> float:
        m = re.search(pattern, body)
        return float(m.group(1)) if m else default
    return {"amount_z": num(r"Amount test\..*?exceeds (\d+(?:\.\d+)?)", AMOUNT_Z),
            "min_pop": num(r"at least (\d+) entries is outside", MIN_POP),
            "min_user": num(r"with at least (\d+) other entries", MIN_USER),
            "flow_z": num(r"flow test\..*?exceeds (\d+(?:\.\d+)?)", FLOW_Z)}


def _baseline(rows: list[dict]) -> dict[str, dict]:
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


def _select(kit: Kit):
    """The plan's selection: the per-account robust baseline (``compute_stats`` first, the ledger
    when it is withheld) and both tests. Returns (plan id, thresholds, selected, scored rows, users)."""
    plan = yield from _find_plan(kit)
    body = (yield from kit.open(plan)).get("body", "") if plan else ""
    th = _thresholds(body)
    groups: dict[str, dict] = {}
    if kit.has("compute_stats"):
        # the baseline comes first: no claim about an entry before the population is measured
        st = yield from kit.call("compute_stats", measure="amount", group_by="account", top_z=0)
        groups = st.get("groups", {})
    rows = yield from kit.ledger([{"column": "line_no", "op": "eq", "value": 1}],
                                 ["entry_id", "account", "debit", "preparer", "reference"])
    if not groups:
        groups = _baseline(rows)
    per_user = Counter(r["preparer"] for r in rows)
    pairs = Counter((r["preparer"], r["account"]) for r in rows)
    scored = {}
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


def _why(eid: str, sel: tuple, th: dict, users: Counter) -> str:
    z, _single, r, g = sel
    base = (f"account {r['account']} population n={g['n']}, median {g['median']:,.2f}, MAD {g['mad']:,.2f}; "
            f"amount {r['debit']:,.2f} is robust z {z:.1f}")
    if z > th["amount_z"]:
        return f"{base}, above the plan's limit of {th['amount_z']:g}"
    return (f"{base}, above {th['flow_z']:g}, and it is the only entry {r['preparer']} posted to account "
            f"{r['account']} out of {users[r['preparer']]} entries")


def naive(kit: Kit):
    """Applies the plan's two outlier tests and flags every entry they select, without vouching any."""
    plan, th, selected, scored, users = yield from _select(kit)
    for eid in selected:
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, CODE, [], f"Entry {eid} is an outlier: {_why(eid, scored[eid], th, users)}.")
    yield from kit.submit(f"Per-account outlier tests: {len(selected)} entries outside their population flagged.")


_DOC_AMOUNT = re.compile(r"(?:Invoice total|Amount accrued): USD ([\d,]+\.\d\d)")
_DOC_ACCOUNT = re.compile(r"GL account:? (\d{4})")


def careful(kit: Kit):
    """Reads the plan, takes the per-account robust baseline, selects with both tests, then vouches
    every selected entry to its support document: flags what disagrees, clears what agrees."""
    plan, th, selected, scored, users = yield from _select(kit)
    ev_plan = [plan] if plan else []
    support = {}
    for d in (yield from kit.documents()):
        m = re.search(r"\b([A-Z]{2,4}-\d+)\b", d["title"])
        if m and d["doc_type"] in ("invoice", "memo"):
            support.setdefault(m.group(1), d["doc_id"])
    n_flag = n_clear = 0
    for eid in selected:
        if kit.calls_left <= 3:
            break
        z, _single, r, g = scored[eid]
        doc = support.get(r["reference"])
        if doc is None and kit.has("search_documents"):
            hits = (yield from kit.call("search_documents", query=r["reference"])).get("documents", [])
            doc = hits[0]["doc_id"] if hits else None
        if doc is None:
            continue
        body = (yield from kit.open(doc)).get("body", "")
        am, ac = _DOC_AMOUNT.search(body), _DOC_ACCOUNT.search(body)
        if not (am and ac):
            continue
        amount, account = float(am.group(1).replace(",", "")), ac.group(1)
        why = _why(eid, scored[eid], th, users)
        if abs(amount - r["debit"]) > 0.004:
            yield from kit.call("get_entry", entry_id=eid)
            yield from kit.flag(eid, CODE, [eid, doc, *ev_plan],
                                f"Entry {eid} was selected as an outlier ({why}). Vouched to {doc}: the document "
                                f"shows {amount:,.2f}, but the entry was keyed as {r['debit']:,.2f}, a misstatement of "
                                f"{r['debit'] - amount:,.2f}.")
            n_flag += 1
        elif account != r["account"]:
            yield from kit.call("get_entry", entry_id=eid)
            yield from kit.flag(eid, CODE, [eid, doc, *ev_plan],
                                f"Entry {eid} was selected as an outlier ({why}). Vouched to {doc}: the document is "
                                f"coded to GL account {account}, but the entry posted it to account {r['account']}.")
            n_flag += 1
        else:
            yield from kit.clear(eid, [doc, *ev_plan],
                                 f"Entry {eid} was selected as an outlier ({why}). Vouched to {doc}: the document "
                                 f"supports the amount {r['debit']:,.2f} and the GL account {account}; no misstatement.")
            n_clear += 1
    yield from kit.submit(f"Per-account robust baseline (plan {plan}): {len(selected)} outliers selected and vouched; "
                          f"{n_flag} misstated flagged, {n_clear} supported cleared.")
