"""The task kit (``jeval_ray.tasks.taskkit``): every form reads back what it writes, the rules say
what their statements say, the draws and the budgeted loop behave, and plants' claims cannot overlap.

Forms are found by scanning the task modules for ``Form`` values, so a task migrated onto the kit
has its forms checked here without a line added. The rules are checked against their own
statements, written again below (as the key audits do), not against the kit's code.
"""

from __future__ import annotations

import inspect

import dataclasses
import datetime as dt
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jeval_ray import tasks
from jeval_ray.builder import ClaimOverlap, WorldBuilder
from jeval_ray.tasks.taskkit import SIGNED_MONEY
from jeval_ray.tasks.taskkit import (ACCOUNT_OPEN, APPROVAL_LIMIT, APPROVED_WHEN_RECORDED, CLOSED_PERIOD, COUNT, DATE,
                                     DOC_NUMBER, INT, LEADER, MONEY, NAME, POSTING_WINDOW, ROUNDING_LIMIT, TIMESTAMP,
                                     TOKEN, USER_MAY_POST, WHOLE_MONEY, Form, Kind, Many, SurfaceRule, call_while, clear,
                                     dispose, fixed, flag, grouped_roles, mentions, review, review_groups, roles,
                                     surface_naive)

FAST = settings(max_examples=60, deadline=None)
#: a form's values are generated from its kinds' regular expressions (slower to draw): fewer examples
FORM = settings(max_examples=25, deadline=None)


def _forms() -> list[tuple[str, Form]]:
    out = []
    for tid in tasks.TASK_IDS:
        mod: ModuleType = tasks.task_module(tid)
        out += [(f"{tid}.{n}", v) for n, v in vars(mod).items() if isinstance(v, Form)]
    return out


FORMS = _forms()


def _kind_values(k: Kind | Many) -> st.SearchStrategy:
    if isinstance(k, Many):
        return st.lists(st.one_of([_values(f) for f in k.forms]), max_size=4).map(tuple)
    if k.domain:
        lo, hi, step = k.domain
        return st.integers(lo // step, hi // step).map(lambda x: x * step)
    if k.read is int:
        return st.integers(-10**9, 10**9)
    if k.name.startswith("fixed"):
        return st.integers(-10**12, 10**12)
    return st.from_regex(k.pattern, fullmatch=True)


def _values(form: Form) -> st.SearchStrategy:
    return st.builds(form.cls, **{n: _kind_values(k) for n, k in form.fields.items()})


def test_the_task_modules_define_forms():
    assert {name.split(".")[0] for name, _ in FORMS} >= {"JE-4"}


@pytest.mark.parametrize("name,form", FORMS, ids=[n for n, _ in FORMS])
def test_every_form_reads_back_what_it_writes(name, form):
    @FORM
    @given(_values(form))
    def roundtrip(value):
        assert form.parse(form.render(value)) == value
    roundtrip()


@dataclasses.dataclass(frozen=True)
class _Note:
    user: str
    amount: int
    when: str
    again: str


def test_a_form_rejects_values_its_kinds_do_not_accept_and_texts_of_another_form():
    note = Form(_Note, "{user} paid {amount} on {when} ({again}, {user})", user=TOKEN, amount=MONEY, when=DATE,
                again=NAME)
    v = _Note("NWALSH", 123456, "2025-03-01", "Nora Walsh")
    assert note.render(v) == "NWALSH paid 1,234.56 on 2025-03-01 (Nora Walsh, NWALSH)"
    assert note.parse(note.render(v)) == v
    assert note.parse("NWALSH paid 1,234.56 on 2025-03-01 (Nora Walsh, OBAKER)") is None  # a repeated field differs
    with pytest.raises(ValueError):
        note.render(_Note("N WALSH", 1, "2025-03-01", "x"))
    with pytest.raises(ValueError):
        Form(_Note, "{user} {amount}")  # the template must use every field
    assert fixed(3).render(5) == "0.005" and INT.render(-4) == "-4"


@dataclasses.dataclass(frozen=True)
class _Diff:
    ref: str
    diff: int


@FAST
@given(st.integers(-10**12, 10**12))
def test_a_signed_amount_always_writes_its_sign_and_reads_back(cents):
    text = SIGNED_MONEY.render(cents)
    assert text[0] == ("-" if cents < 0 else "+") and text[1:] == MONEY.render(abs(cents))
    assert SIGNED_MONEY.read(text) == cents
    line = Form(_Diff, "{ref} | {diff}", ref=TOKEN, diff=SIGNED_MONEY)
    assert SIGNED_MONEY.render(-5) == "-0.05" and line.render(_Diff("INV-1", 123456789)) == "INV-1 | +1,234,567.89"
    assert line.parse("INV-1 | -0.05") == _Diff("INV-1", -5) and line.parse("INV-1 | 0.05") is None  # sign required


@FAST
@given(st.dates().map(str), st.dates().map(str), st.dates().map(str), st.booleans())
def test_user_may_post_while_rights_last(end, keyed, posted, leaver):
    """Stated again: authorised iff the entry was both keyed and posted on or before the date the rights ended."""
    user = {"user_id": "U", "role": "r", "posting_rights": leaver, "status": "terminated" if leaver else "active",
            "termination_date": end if leaver else "", "rights_withdrawn_on": "" if leaver else end}
    assert USER_MAY_POST.check(user, keyed, posted).ok == (keyed <= end and posted <= end)
    assert USER_MAY_POST.suspect(user)
    assert not USER_MAY_POST.check({**user, "termination_date": "", "rights_withdrawn_on": ""}, keyed, posted).ok


@FAST
@given(st.dates().map(str), st.dates().map(str), st.one_of(st.just(""), st.dates().map(str)),
       st.sampled_from(["active", "closed", "blocked"]))
def test_an_account_is_open_within_its_validity(posted, opened, closed, status):
    acct = {"account": "6951", "status": status, "opened": opened, "closed": closed}
    valid = status in ("active", "closed") and opened <= posted and (not closed or posted <= closed)
    assert ACCOUNT_OPEN.check(acct, posted).ok == valid
    assert not ACCOUNT_OPEN.check(None, posted).ok


@FAST
@given(st.sampled_from(["allocation", "keyed"]), st.integers(1, 400), st.integers(1, 100), st.integers(25, 100))
def test_rounding_is_within_three_standard_deviations_of_the_lines_within_the_tolerance(basis, lines, diff, tol):
    # three standard deviations of ``lines`` roundings uniform within half a cent: 0.87 x sqrt(lines) cents
    ok = basis == "allocation" and diff * diff <= 0.87 ** 2 * lines + 1e-9 and diff <= tol
    assert ROUNDING_LIMIT.check(basis, lines, diff, tol).ok == ok


def test_roles_come_from_one_permutation_and_groups_are_one_role_each():
    rng = np.random.default_rng(0)
    r = roles(3, 5, rng)
    assert sorted(r) == [False] * 5 + [True] * 3
    groups = grouped_roles(7, 4, np.random.default_rng(1), 2)
    assert sum(g for g, d in groups if d) == 7 and sum(g for g, d in groups if not d) == 4
    assert all(g in (1, 2, 3) for g, _ in groups)


class _Budget:
    def __init__(self, calls):
        self.calls_left = calls
        self.issued = []

    def flag(self, eid, criteria, evidence, rationale, amount=None):
        self.issued.append(eid)
        self.calls_left -= 1
        yield None


def test_dispose_stops_while_a_call_is_left_for_the_summary():
    kit = _Budget(4)
    gen = dispose(kit, [flag(str(i), "X", [], "why") for i in range(10)])
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        assert stop.value == 3
    assert kit.issued == ["0", "1", "2"] and kit.calls_left == 1


def test_review_issues_what_decide_returns_and_nothing_for_none():
    kit = _Budget(6)

    def decide(i):
        kit.calls_left -= 1  # one read per item
        yield None
        return flag(str(i), "X", [], "why") if i % 2 == 0 else None

    gen = review(kit, range(10), decide, reserve=2)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        assert [d.entry_id for d in stop.value] == ["0", "2"]
    # 6: read 0, flag 0 (4); read 1, nothing (3); read 2, flag 2 (1 <= 2: stop)
    assert kit.issued == ["0", "2"] and kit.calls_left == 1



def test_a_surface_rule_states_the_amount_of_the_field_it_names():
    class _Kit(_Budget):
        def submit(self, summary):
            self.summary = summary
            yield None

    def select(kit):
        return {"2": {"total": 5.0}, "1": {"total": 7.5}}
        yield

    kit = _Kit(9)
    kit.flag = lambda eid, criteria, evidence, rationale, amount=None: iter([kit.issued.append((eid, amount))])
    for rule, amounts in ((SurfaceRule("s", "X", select, "E {entry_id}", "{n}", amount="total"), [7.5, 5.0]),
                          (SurfaceRule("s", "X", select, "E {entry_id}", "{n}"), [None, None])):
        kit.issued = []
        for _ in surface_naive(rule)(kit):
            pass
        assert kit.issued == list(zip(["1", "2"], amounts)) and kit.summary == "2"


def test_a_surface_rule_flags_under_the_criteria_of_the_field_it_names():
    hits = {"1": {"code": "A"}, "2": {"code": "B"}}
    assert [SurfaceRule("s", "X", None, "", "", criteria_of="code").criteria_for(hits[k]) for k in "12"] == ["A", "B"]
    assert SurfaceRule("s", "X", None, "", "").criteria_for(hits["1"]) == "X"


def test_mentions_finds_whole_words_in_any_case():
    assert mentions("Keyed by akim (AP).", "AKIM") and mentions("Anna  Kim; Anna Kim", "anna kim")
    assert not mentions("AKIMBO", "AKIM") and not mentions("", "AKIM") and not mentions("A.KIM", "A+KIM")


def test_plants_cannot_claim_what_another_plant_changed():
    b = WorldBuilder(tasks.get_task("JE-4"), 0, tasks.resolve_knobs("JE-4"))
    b.claim("first", entries=[1, 2], rows=[("users", "NWALSH")], documents=[0])
    b.claim("first", entries=[2])  # a plant may claim its own again
    b.claim("second", entries=[3], rows=[("users", "OBAKER")])
    for clash in ({"entries": [2]}, {"rows": [("users", "NWALSH")]}, {"documents": [0]}):
        with pytest.raises(ClaimOverlap, match="first"):
            b.claim("second", **clash)


def test_tasks_on_the_kit_are_registered_once_with_their_module_names():
    for tid, task in tasks.KIT_TASKS.items():
        mod = tasks.task_module(tid)
        value = tasks.task_value(tid)  # the module's TASK, with the module's docstring as its page
        assert value.id == task.id == tid and value.decisive == task.decisive and task.decisive
        assert (value.spec, value.plant, value.careful, value.naive, value.key_rationale) == (
            mod.SPEC, mod.plant, mod.careful, mod.naive, mod.KEY_RATIONALE)
        assert value.doc == (task.doc or inspect.getdoc(mod))
    assert "JE-4" in tasks.KIT_TASKS


@FAST
@given(st.dates().map(str), st.integers(0, 24 * 3600 - 1), st.sampled_from([(8 * 3600 + 1800, 17 * 3600 + 1800),
                                                                              (7 * 3600, 19 * 3600)]))
def test_the_posting_window_is_business_days_within_the_hours(day, t, hours):
    """Stated again: outside when a Saturday or Sunday, one of the holidays given, or not in [start, end)."""
    holidays = ["2025-12-25", "2025-07-04"]
    outside = (dt.date.fromisoformat(day).weekday() >= 5 or day in holidays or not hours[0] <= t < hours[1])
    assert POSTING_WINDOW.outside([day], [t], holidays, *hours).tolist() == [outside]


@dataclasses.dataclass(frozen=True)
class _Usd:
    amount: int


@dataclasses.dataclass(frozen=True)
class _Ref:
    ref: str


def test_find_all_reads_every_passage_and_a_document_number_is_a_whole_word():
    usd = Form(_Usd, "USD {amount}", amount=MONEY)
    body = "Goods received: USD 1,234.56; price difference: USD -0.50; invoice total: USD 1,234.06\nDue: none"
    assert usd.find_all(body) == [_Usd(123456), _Usd(-50), _Usd(123406)]
    assert usd.find_all("no amount") == [] and usd.search(body) == _Usd(123456)
    ref = Form(_Ref, "{ref}", ref=DOC_NUMBER)
    assert ref.search("Vendor invoice VN-0001234 - Acme Supply") == _Ref("VN-0001234")
    assert ref.search("XVN-0001234 and VN-1234 and VN-00012345X") is None
    assert ref.parse("VI-0000042") == _Ref("VI-0000042")


@dataclasses.dataclass(frozen=True)
class _Shipped:
    units: int
    at: str


def test_a_count_groups_thousands_and_a_timestamp_is_text():
    f = Form(_Shipped, "{units} units at {at}", units=COUNT, at=TIMESTAMP)
    for v in (_Shipped(1234567, "2026-01-14 10:23:45"), _Shipped(0, "2026-01-14 10:23")):
        assert f.parse(f.render(v)) == v
    assert f.render(_Shipped(1234, "2026-01-14 10:23")) == "1,234 units at 2026-01-14 10:23"
    with pytest.raises(ValueError):
        f.render(_Shipped(-1, "2026-01-14"))


class _Kit(_Budget):
    def __init__(self, calls):
        super().__init__(calls)
        self.cleared = []

    def clear(self, eid, evidence, rationale):
        self.cleared.append(eid)
        self.calls_left -= 1
        yield None

    def submit(self, summary):
        self.summary = summary
        self.calls_left -= 1
        yield None


def _run(gen):
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value


def test_review_issues_nothing_for_an_item_decided_none():
    kit = _Kit(10)

    def decide(i):
        yield None
        return None if i % 2 else clear(str(i), [], "agrees")
    issued = _run(review(kit, range(5), decide))
    assert [d.entry_id for d in issued] == kit.cleared == ["0", "2", "4"]


def test_a_surface_rule_reports_the_amount_it_names():
    flagged = []

    class K(_Kit):
        def flag(self, eid, criteria, evidence, rationale, amount=None):
            flagged.append((eid, amount))
            yield None

    def select(kit):
        yield None
        return {"E2": {"credit": 12.5}, "E1": {"credit": 3.0}}
    _run(surface_naive(SurfaceRule("s", "X", select, "{credit}", "{n}", amount="credit"))(K(10)))
    _run(surface_naive(SurfaceRule("s", "X", select, "{credit}", "{n}"))(K(10)))
    assert flagged == [("E1", 3.0), ("E2", 12.5), ("E1", None), ("E2", None)]


def test_a_surface_rule_summary_counts_what_it_caught_and_what_it_flagged_within_the_budget():
    def select(kit):
        yield None
        return {f"E{i}": {} for i in range(5)}
    kit = _Kit(4)
    kit.flag = lambda *a, **k: _Budget.flag(kit, *a[:4])
    _run(surface_naive(SurfaceRule("s", "X", select, "", "caught {n}, flagged {issued}"))(kit))
    assert kit.summary == "caught 5, flagged 3"


@FAST
@given(st.dates().map(str), st.dates().map(str), st.dates().map(str), st.sampled_from(["", "PCA-1"]), st.booleans(),
       st.integers(1, 10**6), st.integers(1, 10**6))
def test_a_closed_period_takes_an_entry_only_under_a_request_approved_before_it_for_the_amount(
        recorded, close, decided, request, approved, cents, approved_cents):
    """Stated again: after the close date of its period, an entry needs a request approved before the
    day it was recorded, for the amount posted; on or before the close date it is close work."""
    posted = "2025-12-31"
    assert CLOSED_PERIOD.after_close(recorded, posted, {"2025-12": close}) == (close if recorded > close else "")
    assert CLOSED_PERIOD.after_close(recorded, posted, {}) == ""
    ok = bool(request) and approved and decided < recorded and approved_cents == cents
    assert CLOSED_PERIOD.check(recorded, cents / 100, request, approved, decided, approved_cents / 100).ok == ok


class _GroupKit(_Kit):
    """``_Kit`` whose clears count among the dispositions issued, in order with the flags."""

    def clear(self, eid, evidence, rationale):
        self.issued.append(eid)
        yield from super().clear(eid, evidence, rationale)


@FAST
@given(st.sampled_from(["IBROWN", "HJOHANSSON"]), st.integers(0, 10**6), st.integers(0, 10**6))
def test_an_approval_covers_the_full_amount_by_another_user(approver, limit, amount):
    """Stated again: approved iff the approver is not the preparer and his or her limit is at least the amount."""
    row = {"user_id": approver, "approval_limit": limit / 100}
    assert APPROVAL_LIMIT.check(row, "HJOHANSSON", amount / 100).ok == (approver != "HJOHANSSON" and limit >= amount)
    assert APPROVAL_LIMIT.covers(limit, amount) == (limit >= amount)
    assert not APPROVAL_LIMIT.check(None, "HJOHANSSON", 0).ok


@FAST
@given(st.one_of(st.none(), st.integers(0, 10**8)), st.integers(0, 10**8), st.dates().map(str), st.dates().map(str))
def test_an_approval_supports_an_entry_when_it_fixes_its_amount_before_it_was_recorded(figure, amount, dated, recorded):
    """Stated again: supported iff a document exists, fixes exactly the amount and is dated on or before the
    recording."""
    ok = figure is not None and figure == amount and dated <= recorded
    assert APPROVED_WHEN_RECORDED.check(figure, amount, dated, recorded).ok == ok


def test_review_groups_decides_a_group_at_a_time_within_its_reserve():
    kit = _GroupKit(9)
    decided = []

    def decide(group):
        decided.append(group)
        return [flag(e, "X", [], "why") if e.startswith("f") else clear(e, [], "why") for e in group]
        yield  # a generator that reads nothing

    groups = [["f1", "c1"], ["f2", "c2", "c3"], ["f3", "f4"]]
    done = _run(review_groups(kit, groups, decide, reserve=lambda g: 2 * len(g)))
    # 9 calls: the first group (reserve 4) is issued, the second (reserve 6) leaves 7 > 6 calls, so it is decided
    # and issued while a call is left for submit (three of them: 7 -> 4), the third's reserve (4) stops the review
    assert decided == groups[:2] and kit.issued == ["f1", "c1", "f2", "c2", "c3"]
    assert [d.entry_id for d in done] == kit.issued and kit.calls_left == 4
    kit = _GroupKit(6)
    done = _run(review_groups(kit, groups[1:], decide, reserve=lambda g: 1))
    assert [d.entry_id for d in done] == ["f2", "c2", "c3", "f3", "f4"] and kit.calls_left == 1


def test_a_surface_summary_may_state_the_flags_issued_and_counts_of_the_hits():
    hits = {f"E{i}": {"run": i // 2} for i in range(6)}

    def select(kit):
        return hits
        yield

    rule = SurfaceRule("in a run", "X", select, "Entry {entry_id} is in run {run}.",
                       "Flagged {issued} of {n} entries in {runs} runs.", in_order=False,
                       counts=lambda h: {"runs": len({v["run"] for v in h.values()})})
    kit = _GroupKit(5)
    _run(surface_naive(rule)(kit))
    assert kit.issued == ["E0", "E1", "E2", "E3"] and kit.summary == "Flagged 4 of 6 entries in 3 runs."


def test_call_while_makes_one_call_per_item_while_the_reserve_lasts():
    kit = _GroupKit(5)

    def search(item):
        kit.calls_left -= 1
        yield None
        return item.upper()

    assert _run(call_while(kit, ["a", "b", "c", "d"], search, reserve=2)) == {"a": "A", "b": "B", "c": "C"}
    assert kit.calls_left == 2


def test_whole_money_and_leaders():
    assert WHOLE_MONEY.render(25_000) == "25,000" and WHOLE_MONEY.read("1,250,000") == 1_250_000
    assert LEADER.render("....") == "...."
    with pytest.raises(ValueError):
        WHOLE_MONEY.render(-5)
    with pytest.raises(ValueError):
        LEADER.render("")
