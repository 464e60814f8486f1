"""JE-12 (L3): population outliers (amounts and user-account flows).

The support pack holds the engagement's analytics plan, which fixes the method: an entry's
population is every entry debiting the same account; its robust z-score is
``(amount - median) / (1.4826 × MAD)`` where MAD is the population's median absolute deviation
(``compute_stats`` reports both). Two tests, both reported under criteria ``OUTLIER``:

* amount test: robust z above ``AMOUNT_Z`` (6) in an account with at least ``MIN_POP`` entries;
* user-account flow test: the entry is the only one its preparer (who posted at least
  ``MIN_USER`` other entries in the period) posted to that account, and its robust z is above
  ``FLOW_Z`` (3).

Planted defects: amount outliers at robust z 8-16 (``amount_outlier``), and about a third of them
user-account flows (``user_account_flow``): a staff member keys a large expense to an account
they never otherwise touch (robust z 3.8-5.5: big for the account, but only the flow reveals it).
Decoys (``large_typical_amount``): automated entries in high-variance accounts (payroll first,
then customer billing, receipts, cost of sales, vendor payments) placed in the upper part of
their own account's spread (robust z 1.5 to 1.5 + 3.5·near_miss). They are among the largest
entries of the ledger, so a ledger-wide screen flags them, but they are typical of their account.

Required evidence: a population baseline (``compute_stats``, scored by ``baseline_before_claim``),
the entry (``get_entry``) and the analytics plan; the same clears a decoy.

The base population's log-normal tails would trip the tests, so ``plant`` sanitises it: base
amounts above robust z 4 are redrawn between 1 and 3.5, and base entries that would fail the flow
test are redrawn below 2.5. Every redrawn or planted amount stays more than one MAD above its
account median, which leaves each account's median and MAD unchanged (so the planted z-scores
are exactly what the agent will compute).
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
    objective='Find entries whose amount or user-account flow is far outside its population. Establish a population baseline before any claim that something is unusual.',
    defect='amount or user-account flow far outside its population',
    decoys='large but typical entries in high-variance accounts',
    required_evidence="a population baseline (compute_stats) before any 'unusual' claim",
    sources=('general_ledger', 'population_statistics'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OUTLIER', 'amount or user-account flow far outside its population'),
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
# high-variance accounts for decoys, most "large" first (payroll dwarfs the ledger's typical entry)
WIDE = ("6000", "1100", "5000", "1000", "2000")


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
        "6. Document the baseline (median, MAD, robust z) for every entry reported or cleared.",
        "2025-11-14",
    )


def _stats(b) -> dict[str, tuple[int, float, float]]:
    """account -> (n, median, MAD) of entry amounts (USD) by debit account."""
    x = b.e["debit_cents"] / 100.0
    out = {}
    for a in sorted(set(b.e["debit_account"].tolist())):
        v = x[b.e["debit_account"] == a]
        med = float(np.median(v))
        out[a] = (len(v), med, float(np.median(np.abs(v - med))))
    return out


def robust_z(b, st=None) -> np.ndarray:
    """Every entry's robust z-score in its debit account's population (0 where not testable)."""
    st = st or _stats(b)
    x = b.e["debit_cents"] / 100.0
    z = np.zeros(b.n)
    for a, (n, med, mad) in st.items():
        if n >= MIN_POP and mad > 0:
            m = b.e["debit_account"] == a
            z[m] = (x[m] - med) / (SCALE * mad)
    return z


def _flow_single(b) -> np.ndarray:
    """Entries that are their preparer's only posting to the account, by a preparer with >= MIN_USER others."""
    prep, acct = b.e["preparer"], b.e["debit_account"]
    pairs = Counter(zip(prep.tolist(), acct.tolist()))
    users = Counter(prep.tolist())
    return np.array([pairs[(p, a)] == 1 and users[p] - 1 >= MIN_USER for p, a in zip(prep.tolist(), acct.tolist())])


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


def plant(b) -> None:
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    plan = _plan(b)
    n_flow = b.n_defects // 3
    n_amt = b.n_defects - n_flow
    planted: dict[int, tuple[str, float]] = {}  # idx -> (role, target robust z)

    # user-account flows: a staff member's entry re-keyed to an expense account they never post to
    for _ in range(n_flow):
        users = Counter(e["preparer"].tolist())
        acct_n = Counter(e["debit_account"].tolist())
        options = []
        for u in PREPARERS:
            if users[u] < MIN_USER + 1:
                continue
            mine = set(e["debit_account"][e["preparer"] == u].tolist())
            free = [a for a in EXPENSES if a not in mine and acct_n[a] + 1 >= MIN_POP]
            own = (e["preparer"] == u) & e["manual"] & np.isin(e["template"], ["vendor_invoice", "accrual"]) & ~b.used
            if free and own.any():
                options.append((u, free, own))
        if not options:
            n_amt += 1  # no user qualifies in a tiny slice: plant an amount outlier instead
            continue
        u, free, own = options[int(rng.integers(0, len(options)))]
        idx = int(b.pick(1, own, what=f"entries by {u}")[0])
        a = free[int(rng.integers(0, len(free)))]
        e["debit_account"][idx] = a
        if str(e["description"][idx]).startswith("Accrual "):
            # keep the accrual's wording consistent with its new account
            month = _MONTHS[int(e["post_date"][idx].astype("datetime64[M]").astype(int) % 12)]
            e["description"][idx] = f"Accrual {month} {WHAT[a]}"
        planted[idx] = ("flow", float(rng.uniform(3.8, 5.5)))

    # amount outliers: anywhere with a population large enough to test
    acct_n = Counter(e["debit_account"].tolist())
    in_acct: Counter = Counter(str(e["debit_account"][i]) for i in planted)

    def room(accts) -> np.ndarray:
        # at most a quarter of an account's entries are planted, so its median and MAD stay base-driven
        ok = [a for a in accts if in_acct[a] + 1 <= acct_n[a] // 4]
        return np.isin(e["debit_account"], ok)

    def take(mask, what: str, role: str, lo: float, hi: float) -> None:
        idx = int(b.pick(1, mask, what=what)[0])
        in_acct[str(e["debit_account"][idx])] += 1
        planted[idx] = (role, float(rng.uniform(lo, hi)))

    for _ in range(n_amt):
        take(room([a for a, k in acct_n.items() if k >= 10]), "entries in accounts with 10+ entries", "amount", 8.0, 16.0)

    # decoys: automated entries high in the spread of a wide account, payroll first
    wide = [a for a in WIDE if acct_n[a] >= MIN_POP]
    auto = ~e["manual"]
    hi = max(1.6, 1.5 + 3.5 * near)
    k_pay = min(b.n_decoys, acct_n["6000"] // 4) if "6000" in wide else 0
    for k in range(b.n_decoys):
        mask = auto & room(["6000"] if k < k_pay else [a for a in wide if a != "6000"]) & ~b.used
        take(mask if mask.any() else auto & room(wide), "automated entries in wide accounts", "decoy", 1.5, hi)

    # Park planted amounts far above every median: the robust baseline then no longer depends on them.
    for idx in planted:
        e["debit_cents"][idx] = e["credit_cents"][idx] = 10**13
    st = _stats(b)
    z = robust_z(b, st)
    is_planted = np.zeros(b.n, bool)
    is_planted[list(planted)] = True
    # Sanitise the base: redrawn amounts stay above median + MAD, so medians and MADs do not move.
    for idx in np.flatnonzero(~is_planted & (z > 4.0)):
        _set_amount(b, int(idx), _at_z(st, str(e["debit_account"][idx]), float(rng.uniform(1.0, 3.5))))
    for idx, (role, target) in sorted(planted.items()):
        _set_amount(b, idx, _at_z(st, str(e["debit_account"][idx]), target))
    z = robust_z(b, st)
    for idx in np.flatnonzero(~is_planted & _flow_single(b) & (z > FLOW_Z - 0.5)):
        _set_amount(b, int(idx), _at_z(st, str(e["debit_account"][idx]), float(rng.uniform(1.0, 2.4))))

    for idx, (role, _t) in sorted(planted.items()):
        if role == "decoy":
            b.add_decoy(idx, "large_typical_amount", ["entry", plan])
        else:
            b.add_defect(idx, "user_account_flow" if role == "flow" else "amount_outlier", CODE, ["entry", plan])


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


def naive(kit: Kit):
    """A ledger-wide 3-sigma screen: flags the largest z-scores of the whole ledger, ignoring accounts."""
    if kit.has("compute_stats"):
        st = yield from kit.call("compute_stats", measure="amount", top_z=50)
        top = [(t["entry_id"], t["value"], t["z"]) for t in st.get("top_z_scores", [])]
        pop = st.get("population", {})
    else:
        rows = yield from kit.ledger([{"column": "line_no", "op": "eq", "value": 1}], ["entry_id", "debit"])
        x = np.array([r["debit"] for r in rows])
        mu, sd = float(x.mean()), float(x.std(ddof=1))
        top = sorted(((r["entry_id"], r["debit"], (r["debit"] - mu) / sd) for r in rows), key=lambda t: -t[2])[:50]
        pop = {"mean": round(mu, 2), "std": round(sd, 2)}
    hits = [t for t in top if t[2] >= 3.0]
    for eid, value, z in hits:
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, CODE, [], f"Entry {eid}: amount {value:,.2f} is an outlier, z {z:.1f} against the "
                                           f"ledger mean {pop.get('mean')} and standard deviation {pop.get('std')}.")
    yield from kit.submit(f"Ledger-wide screen: {len(hits)} entries above 3 standard deviations flagged.")


def careful(kit: Kit):
    """Reads the plan, takes the per-account robust baseline, applies both tests, clears large typical entries."""
    plan = yield from _find_plan(kit)
    body = (yield from kit.open(plan)).get("body", "") if plan else ""
    th = _thresholds(body)
    top: list[dict] = []
    groups: dict[str, dict] = {}
    if kit.has("compute_stats"):
        # the baseline comes first: no claim about an entry before the population is measured
        st = yield from kit.call("compute_stats", measure="amount", group_by="account", top_z=50)
        groups = st.get("groups", {})
        top = st.get("top_z_scores", [])
    rows = yield from kit.ledger([{"column": "line_no", "op": "eq", "value": 1}],
                                 ["entry_id", "account", "debit", "preparer"])
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
    flags = sorted((eid for eid, (z, single, _r, _g) in scored.items()
                    if z > th["amount_z"] or (single and z > th["flow_z"])), key=lambda k: -scored[k][0])
    ev_plan = [plan] if plan else []
    for eid in flags:
        if kit.calls_left <= 2:
            break
        z, single, r, g = scored[eid]
        yield from kit.call("get_entry", entry_id=eid)
        base = (f"account {r['account']} population n={g['n']}, median {g['median']:,.2f}, MAD {g['mad']:,.2f}; "
                f"amount {r['debit']:,.2f} is robust z {z:.1f}")
        if z > th["amount_z"]:
            why = f"above the plan's limit of {th['amount_z']:g}"
        else:
            why = (f"above {th['flow_z']:g}, and it is the only entry {r['preparer']} posted to account "
                   f"{r['account']} out of {per_user[r['preparer']]} entries")
        yield from kit.flag(eid, CODE, [eid, *ev_plan], f"Entry {eid} is an outlier: {base}, {why}.")
    # the entries a ledger-wide screen would raise: large, but judged against their own account
    big = [t for t in top if t.get("z", 0) >= 3.0 and t["entry_id"] not in flags and t["entry_id"] in scored]
    if not top:
        big = [{"entry_id": k, "z": None} for k in sorted(scored, key=lambda k: -scored[k][2]["debit"])[:10]
               if k not in flags]
    for t in big:
        if kit.calls_left <= 3:
            break
        eid = t["entry_id"]
        z, _single, r, g = scored[eid]
        yield from kit.call("get_entry", entry_id=eid)
        wide = f" (ledger-wide z {t['z']:.1f})" if t.get("z") is not None else ""
        yield from kit.clear(eid, [eid, *ev_plan],
                             f"Entry {eid}: amount {r['debit']:,.2f}{wide} is large for the ledger but typical of "
                             f"account {r['account']} (n={g['n']}, median {g['median']:,.2f}, MAD {g['mad']:,.2f}): "
                             f"robust z {z:.1f}, within the plan's limit of {th['amount_z']:g}.")
    yield from kit.submit(f"Per-account robust baseline (plan {plan}): {len(flags)} entries outside their population "
                          f"flagged; {len(big)} large but typical entries examined.")
