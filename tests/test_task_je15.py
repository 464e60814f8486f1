"""JE-15 (shell-vendor scheme): the planted scheme obeys the rule, decoys are cleared by their
documents, the base is clean, the scoring hook rewards naming the user, and careful names him or her
(what every task promises, the built-in agents included, is tests/test_task_contract.py)."""

from __future__ import annotations


import pytest

from jeval_ray.tools._tools import Disposition, EpisodeState
from jeval_ray.scoring import final_dispositions
from jeval_ray.tasks.je15 import outcome_adjust

TASK = "JE-15"
SEEDS = range(5)


def heads(world) -> dict[str, dict]:
    return {r["entry_id"]: r for r in world.ledger.to_pylist() if r["line_no"] == 1}


def table(world, name) -> list[dict]:
    return world.master[name].to_pylist()


def test_scheme_pays_an_employee_under_the_limit_with_one_approver(worlds):
    for w in worlds.values():
        h = heads(w)
        users = {u["user_id"]: u for u in table(w, "users")}
        staff_bank = {u["bank_account"]: u["user_id"] for u in users.values() if u["bank_account"]}
        vendors = {v["vendor_id"]: v for v in table(w, "vendors")}
        log = table(w, "vendor_changes")
        rows = [h[d.entry_id] for d in w.defects]
        assert len(w.defects) >= 3
        assert len({r["vendor_id"] for r in rows}) == 1 + (len(rows) >= 4) and len({r["approver"] for r in rows}) == 1
        assert len({r["preparer"] for r in rows}) == 1
        user = rows[0]["preparer"]
        for v in (vendors[x] for x in {r["vendor_id"] for r in rows}):
            assert staff_bank.get(v["bank_account"]) == user  # the vendor pays the preparer's own account
            assert "2025-01-01" <= v["created_on"] <= "2025-12-31"
            # the scheme user created the vendor or put his or her account on it, per the change log
            assert any(r["vendor_id"] == v["vendor_id"] and r["changed_by"] == user and r["new_value"] == v["bank_account"]
                       for r in log)
        months = {str(r["posting_date"])[:7] for r in rows}
        assert len(months) >= min(3, len(rows))  # spread over the year
        for d in w.defects:
            r = h[d.entry_id]
            assert r["source"] == "manual" and r["debit"] < users[r["approver"]]["approval_limit"]
            assert d.criteria == "SHELL_VENDOR" and d.misstatement == pytest.approx(r["debit"])
            assert {"master:vendors", "master:vendor_changes", "master:users", d.entry_id} <= set(d.required_evidence)
            stmt = [w.document(x) for x in d.required_evidence if x.startswith("DOC-")]
            assert len(stmt) == 1 and stmt[0].doc_type == "bank_statement"
            line = next(ln for ln in stmt[0].body.splitlines() if f"invoice {r['reference']}" in ln)
            assert vendors[r["vendor_id"]]["bank_account"] in line and f"-{r['debit']:.2f}" in line


def test_a_new_vendors_name_does_not_tell_the_shell_from_the_others():
    """Every vendor set up in the year has its own prefix, and shells and legitimate new vendors take
    their category's stems alike (once, shells were named first and so took the first stem some 85 %
    of the time against 59 % for the others: a listing-only classifier read the scheme off the name)."""
    from jeval_ray.books import master as md
    from jeval_ray.world import generate_world

    first_stem = {"shell": [], "legit": []}
    for seed in range(200, 320):
        w = generate_world(TASK, seed)
        h = heads(w)
        vendors = {v["vendor_id"]: v for v in table(w, "vendors")}
        kind = {h[d.entry_id]["vendor_id"]: "shell" for d in w.defects}
        kind.update({h[d.entry_id]["vendor_id"]: "legit" for d in w.decoys})
        new = [v for v in vendors.values() if v["created_on"] >= "2025-01-01"]
        assert len({v["name"].split(" ", 1)[0] for v in new}) == len(new), (seed, [v["name"] for v in new])
        for vid, k in kind.items():
            v = vendors[vid]
            stems = md.CATEGORIES[md.CATEGORY[v["category"]]].stems
            first_stem[k].append(v["name"].split(" ", 1)[1] == stems[0])
    shell, legit = (sum(x) / len(x) for x in (first_stem["shell"], first_stem["legit"]))
    assert abs(shell - legit) < 0.12, (shell, legit)


def test_decoys_are_new_vendors_cleared_by_their_set_up_forms(worlds):
    for w in worlds.values():
        h = heads(w)
        staff_bank = {u["bank_account"] for u in table(w, "users") if u["bank_account"]}
        vendors = {v["vendor_id"]: v for v in table(w, "vendors")}
        assert w.decoys
        for d in w.decoys:
            v = vendors[h[d.entry_id]["vendor_id"]]
            assert "2025-01-01" <= v["created_on"] <= "2025-12-31"
            assert v["bank_account"] not in staff_bank
            form = next(w.document(x) for x in d.clearing_evidence if x.startswith("DOC-"))
            assert form.doc_type == "vendor_form" and v["name"] in form.title and "call-back" in form.body
            assert {"master:vendors", "master:users"} <= set(d.clearing_evidence)


def test_base_population_does_not_trip_the_rule(worlds):
    for w in worlds.values():
        planted = w.defect_ids | {d.entry_id for d in w.decoys}
        staff_bank = {u["bank_account"] for u in table(w, "users") if u["bank_account"]}
        vendors = {v["vendor_id"]: v for v in table(w, "vendors")}
        shells = {k for k, v in vendors.items() if v["bank_account"] in staff_bank}
        assert 1 <= len(shells) <= 2
        for eid, r in heads(w).items():
            v = vendors.get(r["vendor_id"])
            if v is None or eid in planted or r["document_type"] == "VP":  # payments: see the payment test
                continue
            assert r["vendor_id"] not in shells, eid
            assert v["created_on"] < "2025-01-01", eid


def _state(world, summary: str, flags: list[tuple[str, str]]) -> EpisodeState:
    st = EpisodeState(world=world, criteria_codes=("SHELL_VENDOR",), step_idx=len(flags) + 1)
    st.summary = summary
    st.dispositions = [Disposition(i + 1, eid, "flag", (), why, "SHELL_VENDOR") for i, (eid, why) in enumerate(flags)]
    return st


def _adjust(w, st, outcome: float):
    return outcome_adjust(w, st, outcome, final_dispositions(st))


def test_outcome_adjust_rewards_naming_the_scheme_user_in_right_flags_only(worlds):
    w = worlds[0]
    h = heads(w)
    user = h[w.defects[0].entry_id]["preparer"]
    others = [u["user_id"] for u in table(w, "users") if u["role"] != "System" and u["user_id"] != user]
    # the summary earns nothing, however precisely it names the user
    out, extra = _adjust(w, _state(w, f"The scheme was run by {user}.", []), 0.0)
    assert extra == {"scheme_user_named": False} and out == 0.0
    out, extra = _adjust(w, _state(w, "Invoices of a vendor paying a staff account.", []), 1.0)
    assert extra == {"scheme_user_named": False} and out == pytest.approx(0.85)
    # naming everybody is not naming the user
    everyone = " ".join([user, *others])
    _, extra = _adjust(w, _state(w, "", [(d.entry_id, everyone) for d in w.defects]), 1.0)
    assert extra["scheme_user_named"] is False
    # flags of decoys (not scheme invoices) naming the user earn nothing
    _, extra = _adjust(w, _state(w, user, [(d.entry_id, f"paid to the account of {user}") for d in w.decoys]), 0.0)
    assert extra["scheme_user_named"] is False
    flags = [(d.entry_id, f"paid to the account of {user}") for d in w.defects]
    out, extra = _adjust(w, _state(w, "", flags), 1.0)
    assert extra["scheme_user_named"] is True and out == pytest.approx(1.0)


def test_every_new_vendor_invoice_is_paid_in_the_ledger_as_on_the_statement(worlds):
    """The books tie: each planted invoice is paid by ledger payments (Dr 2000 / Cr 1000) of the same
    vendor summing to its amount, each on the bank statement under its reference, on or after its
    posting date, to the vendor's account."""
    for w in worlds.values():
        h = heads(w)
        vendors = {v["vendor_id"]: v for v in table(w, "vendors")}
        pays = {r["reference"]: r for r in h.values() if r["document_type"] == "VP"}
        lines = {ln.split(" | ")[1]: ln.split(" | ") for d in w.documents if d.doc_type == "bank_statement"
                 for ln in d.body.splitlines() if ln.count(" | ") == 4}
        for rec in (*w.defects, *w.decoys):
            inv = h[rec.entry_id]
            paid = [ln for ln in lines.values() if ln[2].endswith(f"invoice {inv['reference']}")]
            assert paid, rec.entry_id
            total = 0.0
            for day, ref, text, acct, amount in paid:
                pay = pays[ref]
                assert pay["vendor_id"] == inv["vendor_id"] and pay["account"] == "2000"
                assert vendors[inv["vendor_id"]]["name"] in text and acct == vendors[inv["vendor_id"]]["bank_account"]
                assert str(pay["posting_date"]) <= day and float(amount.replace(",", "")) == pytest.approx(-pay["debit"])
                total += pay["debit"]
            assert total == pytest.approx(inv["debit"])


def test_shell_and_legitimate_vendors_share_one_surface(worlds):
    """Every new vendor's invoices are keyed by one clerk under his or her limit and approved by one
    approver, as the scheme's are: the listing alone does not tell them apart."""
    for w in worlds.values():
        h = heads(w)
        users = {u["user_id"]: u for u in table(w, "users")}
        by_vendor: dict[str, list[dict]] = {}
        for rec in (*w.defects, *w.decoys):
            by_vendor.setdefault(h[rec.entry_id]["vendor_id"], []).append(h[rec.entry_id])
        assert len(by_vendor) >= 2
        # about as many invoices per legitimate vendor as per shell (default knobs): the count says nothing
        shells = {h[d.entry_id]["vendor_id"] for d in w.defects}
        assert max(len(r) for v, r in by_vendor.items() if v not in shells) >= min(len(by_vendor[v]) for v in shells)
        for rows in by_vendor.values():
            assert len({r["preparer"] for r in rows}) == 1 and len({r["approver"] for r in rows}) == 1
            for r in rows:
                assert r["source"] == "manual" and r["document_type"] == "VN" and r["description"].startswith("Invoice ")
                assert r["debit"] < users[r["approver"]]["approval_limit"] and r["approver"] != r["preparer"]


def test_decisive_facts_are_in_the_evidence(worlds):
    for w in worlds.values():
        h = heads(w)
        users = {u["user_id"]: u for u in table(w, "users")}
        vendors = {v["vendor_id"]: v for v in table(w, "vendors")}
        for d in w.defects:
            bank, user, vid, amount, stmt = d.facts
            assert vendors[vid]["bank_account"] == bank == users[user]["bank_account"]
            assert h[d.entry_id]["vendor_id"] == vid and float(amount) == pytest.approx(h[d.entry_id]["debit"])
            assert stmt in d.required_evidence and bank in w.document(stmt).body
        for d in w.decoys:
            bank, vid, form, word = d.facts
            assert vendors[vid]["bank_account"] == bank and bank not in {u["bank_account"] for u in users.values()}
            assert form in d.clearing_evidence and word in w.document(form).body


@pytest.mark.parametrize("seed", SEEDS)
def test_careful_names_the_scheme_user(seed):
    """The rest of what the agents promise is tests/test_task_contract.py."""
    from support.worlds import played

    o = played(TASK, "careful", seed)
    assert o.score.verification.extra["scheme_user_named"] is True
