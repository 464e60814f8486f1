"""The budgeted solver loop: selection, reading, dispositions within the step budget, the summary.

A task's ``careful`` strategy states only its procedure: what it selects, what it reads, and the
``Disposition`` it reaches for each selected entry. The kit issues the dispositions while the
step budget lasts (``reserve`` calls are kept back for ``submit``) and submits the summary, so no
task module reads ``kit.calls_left``.

Two shapes of procedure:

* decide everything first, then dispose: ``yield from dispose(kit, decisions)`` issues a list of
  dispositions in order until the budget runs out;
* read as you go: ``yield from review(kit, items, decide)`` calls the generator ``decide(item)``
  (which may open documents) for each item and issues its disposition, stopping when the budget
  leaves only ``reserve`` calls; ``review_groups`` does the same for groups of entries decided
  together (a run, a pair), with a reserve per group.

A task's ``naive`` strategy is its stated surface rule (``SurfaceRule``: the selection and the words
of a flag) applied with no further evidence: ``naive = surface_naive(RULE)``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from jeval_ray.protocol.kit import MAX_CALLS_PER_REPLY, Kit, Step, Strategy

I = TypeVar("I")
G = TypeVar("G")
Steps = Generator[Step, Any, Any]
#: a selection: a generator of tool calls returning the selected entries by entry id
Selection = Callable[[Kit], Generator[Step, Any, Mapping[str, Mapping[str, Any]]]]


@dataclass(frozen=True)
class Disposition:
    """What the solver concludes for one entry: flag it (``criteria``) or clear it, with the
    evidence cited and the rationale written."""

    entry_id: str
    flag: bool
    evidence: tuple[str, ...]
    rationale: str
    criteria: str = ""
    amount: float | None = None


def flag(entry_id: str, criteria: str, evidence: Sequence[str], rationale: str,
         amount: float | None = None) -> Disposition:
    """A flag of ``entry_id`` under ``criteria``."""
    return Disposition(entry_id, True, tuple(evidence), rationale, criteria, amount)


def clear(entry_id: str, evidence: Sequence[str], rationale: str) -> Disposition:
    """A clearance of ``entry_id``."""
    return Disposition(entry_id, False, tuple(evidence), rationale)


def issue(kit: Kit, d: Disposition) -> Steps:
    """Issue one disposition (``flag_entry`` or ``clear_entry``)."""
    if d.flag:
        return (yield from kit.flag(d.entry_id, d.criteria, list(d.evidence), d.rationale, d.amount))
    return (yield from kit.clear(d.entry_id, list(d.evidence), d.rationale))


def dispose(kit: Kit, decisions: Iterable[Disposition], *, reserve: int = 1) -> Generator[Step, Any, int]:
    """Issue ``decisions`` in order while more than ``reserve`` calls are left; the number issued."""
    done = 0
    for d in decisions:
        if kit.calls_left <= reserve:
            break
        yield from issue(kit, d)
        done += 1
    return done


def review(kit: Kit, items: Iterable[I], decide: Callable[[I], Generator[Step, Any, Disposition | None]], *,
           reserve: int = 2, reads: Callable[[I], Sequence[tuple[str, dict]]] | None = None
           ) -> Generator[Step, Any, list[Disposition]]:
    """For each item while more than ``reserve`` calls are left: ``decide`` it (reading what it
    needs) and issue the disposition; a ``decide`` that returns ``None`` (what it read does not
    bear on the item: no support filed, a document of another kind) issues nothing for that item.
    The dispositions issued.

    ``reads(item)``, when given, names the calls (tool, args) ``decide`` will make for an item before
    it reads anything: those of the next few items go out together in one reply (``Kit.prefetch``),
    as a model asks for the support of several entries at once, within the same budget: an item is
    reached exactly when it would be reached reading one call at a time."""
    out: list[Disposition] = []
    todo = list(items)
    prepaid = 0  # calls already made for items not yet decided
    fetched: dict[int, int] = {}
    for i, item in enumerate(todo):
        if kit.calls_left + prepaid <= reserve:
            break
        if reads is not None and i not in fetched:
            prepaid += yield from _prefetch(kit, todo, i, reads, reserve, prepaid, fetched)
        d = yield from decide(item)
        prepaid -= fetched.get(i, 0)
        if d is None:
            continue
        yield from issue(kit, d)
        out.append(d)
    return out


def _prefetch(kit: Kit, todo: list[I], start: int, reads: Callable[[I], Sequence[tuple[str, dict]]], reserve: int,
              prepaid: int, fetched: dict[int, int]) -> Generator[Step, Any, int]:
    """Make the reads of ``todo[start:]`` in one reply: as many items as fit in it that the budget reaches
    one call at a time (each costs its reads and its disposition); the calls made."""
    left = kit.calls_left + prepaid
    room = max(1, MAX_CALLS_PER_REPLY - kit.waiting)
    calls: list[tuple[str, dict]] = []
    for j in range(start, len(todo)):
        want = list(reads(todo[j]))
        if left <= reserve or (calls and len(calls) + len(want) > room):
            break
        fetched[j] = len(want)
        calls += want
        left -= len(want) + 1
    yield from kit.prefetch(calls)
    return len(calls)


def review_groups(kit: Kit, groups: Iterable[G], decide: Callable[[G], Generator[Step, Any, Sequence[Disposition]]],
                  *, reserve: Callable[[G], int]) -> Generator[Step, Any, list[Disposition]]:
    """For each group of entries decided together (a run of invoices, a pair of postings) while more
    than ``reserve(group)`` calls are left (its reads and dispositions): ``decide`` the group (reading
    what it needs; one disposition per entry) and issue its dispositions while a call is left for
    ``submit``. The dispositions issued."""
    out: list[Disposition] = []
    for group in groups:
        if kit.calls_left <= reserve(group):
            break
        ds = list((yield from decide(group)))
        done = yield from dispose(kit, ds)
        out += ds[:done]
    return out


def read_while(kit: Kit, doc_ids: Iterable[str], *, reserve: int) -> Generator[Step, Any, dict[str, str]]:
    """Open each of ``doc_ids`` while more than ``reserve`` calls are left (the calls the procedure
    still needs after reading), several in one reply (``Kit.gather``: which to open does not depend on
    what another says); their bodies by id, in the order opened."""
    ids = list(dict.fromkeys(doc_ids))[: max(0, kit.calls_left - reserve)]
    got = yield from kit.gather([("open_document", {"doc_id": d}) for d in ids])
    return {d: obs.get("body", "") for d, obs in zip(ids, got)}


def call_while(kit: Kit, items: Iterable[I], call: Callable[[I], Steps], *,
               reserve: int) -> Generator[Step, Any, dict[I, Any]]:
    """Make ``call(item)`` (one tool call: a search for an entry's reference ...) for each of
    ``items`` while more than ``reserve`` calls are left; the results by item, in the order made
    (``read_while`` is this for opening documents)."""
    out: dict[I, Any] = {}
    for item in items:
        if kit.calls_left <= reserve:
            break
        out[item] = yield from call(item)
    return out


def gather_while(kit: Kit, calls: Sequence[tuple[str, dict]], *, reserve: int) -> Generator[Step, Any, list[dict]]:
    """Make independent ``calls`` ((tool, args): reads whose arguments do not depend on one another's
    results) while more than ``reserve`` calls are left, several in one reply (``Kit.gather``); their
    results, in order (fewer than ``calls`` when the budget ran short)."""
    return (yield from kit.gather(list(calls)[: max(0, kit.calls_left - reserve)]))


def tally(decisions: Iterable[Disposition]) -> tuple[int, int]:
    """(flags, clears) among ``decisions``."""
    ds = list(decisions)
    flags = sum(d.flag for d in ds)
    return flags, len(ds) - flags


@dataclass(frozen=True)
class SurfaceRule:
    """A task's stated red-flag rule, as a naive auditor applies it: ``select`` the entries it
    catches (a generator of tool calls returning them by entry id), flag each under ``criteria``
    citing ``evidence`` with the rationale ``because`` and submit ``summary``. ``because`` is a
    format string over the entry's fields and ``entry_id`` (``"Entry {entry_id} was prepared by
    {preparer}."``); so is each item of ``evidence`` (an item that formats to '' is left out);
    ``summary`` is one over ``n``, the number caught, and may also say ``{issued}`` (the
    flags issued within the budget) and the numbers ``counts(hits)`` returns (e.g. ``{runs}``: how many runs
    the caught entries form); ``amount`` names the entry's field whose value each flag states as its amount
    (a task that asks for amounts) and ``criteria_of`` the field holding each entry's criteria code (a rule
    catching under two). The entries are flagged in entry-id order, or in the order ``select`` returns them
    when ``in_order`` is false. ``statement`` is the rule in words."""

    statement: str
    criteria: str
    select: Selection
    because: str
    summary: str
    evidence: tuple[str, ...] = ()
    in_order: bool = True
    #: the field of a caught entry holding the amount each flag states (a task that asks for amounts,
    #: e.g. the entry's own total); '' states none
    amount: str = ""
    #: the field of a caught entry holding the criteria code it is flagged under, for a rule that
    #: catches under two (JE-11: related party or pairing); '' flags every entry under ``criteria``
    criteria_of: str = ""
    counts: Callable[[Mapping[str, Mapping[str, Any]]], Mapping[str, Any]] | None = None

    def rationale(self, entry_id: str, entry: Mapping[str, Any]) -> str:
        """The rationale of the flag of one caught entry."""
        return self.because.format_map({**entry, "entry_id": entry_id})

    def evidence_of(self, entry_id: str, entry: Mapping[str, Any]) -> list[str]:
        """The evidence the flag of one caught entry cites."""
        items = (e.format_map({**entry, "entry_id": entry_id}) for e in self.evidence)
        return [x for x in items if x]

    def amount_of(self, entry: Mapping[str, Any]) -> float | None:
        """The amount the flag of one caught entry states (``None`` when the rule states none)."""
        return entry[self.amount] if self.amount else None

    def criteria_for(self, entry: Mapping[str, Any]) -> str:
        """The criteria code the flag of one caught entry is raised under."""
        return str(entry[self.criteria_of]) if self.criteria_of else self.criteria


def surface_naive(rule: SurfaceRule) -> Strategy:
    """The naive strategy of a surface rule: flag every entry it selects, in entry-id order, while
    the budget lasts, then submit."""

    def naive(kit: Kit) -> Generator[Step, Any, None]:
        hits = yield from rule.select(kit)
        ids = sorted(hits) if rule.in_order else list(hits)
        done = yield from dispose(kit, (flag(eid, rule.criteria_for(hits[eid]), rule.evidence_of(eid, hits[eid]),
                                             rule.rationale(eid, hits[eid]), rule.amount_of(hits[eid])) for eid in ids))
        counts = rule.counts(hits) if rule.counts else {}
        yield from kit.submit(rule.summary.format(n=len(hits), issued=done, **counts))

    naive.__doc__ = f"Flags every entry the surface rule catches ({rule.statement}), reading no further evidence."
    return naive


__all__ = ["Disposition", "Selection", "SurfaceRule", "call_while", "clear", "dispose", "flag", "gather_while", "issue",
           "read_while",
           "review", "review_groups", "surface_naive", "tally"]
