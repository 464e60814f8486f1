"""The task kit (``jeval_ray.tasks.taskkit``): every form reads back what it writes, the rules say
what their statements say, the draws and the budgeted loop behave, and plants' claims cannot overlap.

Forms are found by scanning the task modules for ``Form`` values, so a task migrated onto the kit
has its forms checked here without a line added. The rules are checked against their own
statements, written again below (as the key audits do), not against the kit's code.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jeval_ray import tasks
from jeval_ray.builder import ClaimOverlap, WorldBuilder
from jeval_ray.tasks.taskkit import (ACCOUNT_OPEN, DATE, INT, MONEY, NAME, POSTING_WINDOW, ROUNDING_LIMIT, TOKEN,
                                     USER_MAY_POST, Form, Kind, Many, SurfaceRule, dispose, fixed, flag, grouped_roles,
                                     mentions, review, roles, surface_naive)

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
def test_rounding_is_at_most_half_a_cent_a_line_within_the_tolerance(basis, lines, diff, tol):
    ok = basis == "allocation" and diff * 2 <= lines and diff <= tol
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


def test_review_issues_nothing_for_an_item_its_decision_leaves_unjudged():
    kit = _Budget(5)

    def decide(i):
        kit.calls_left -= 1  # one read per item
        yield None
        return None if i == 1 else flag(str(i), "X", [], "why")

    gen = review(kit, range(4), decide)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        assert [d.entry_id for d in stop.value] == ["0"]
    assert kit.issued == ["0"] and kit.calls_left == 2  # read 0, flag 0, read 1 (nothing issued); two left: stop


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
        assert tasks.task_value(tid) is task and task.id == tid
        assert (task.spec, task.plant, task.careful, task.naive, task.key_rationale) == (
            mod.SPEC, mod.plant, mod.careful, mod.naive, mod.KEY_RATIONALE)
        assert task.decisive
    assert "JE-4" in tasks.KIT_TASKS


@FAST
@given(st.dates().map(str), st.integers(0, 24 * 3600 - 1), st.sampled_from([(8 * 3600 + 1800, 17 * 3600 + 1800),
                                                                              (7 * 3600, 19 * 3600)]))
def test_the_posting_window_is_business_days_within_the_hours(day, t, hours):
    """Stated again: outside when a Saturday or Sunday, one of the holidays given, or not in [start, end)."""
    holidays = ["2025-12-25", "2025-07-04"]
    outside = (dt.date.fromisoformat(day).weekday() >= 5 or day in holidays or not hours[0] <= t < hours[1])
    assert POSTING_WINDOW.outside([day], [t], holidays, *hours).tolist() == [outside]
