"""Score-gaming test agents: what an adversary would try to earn points without auditing.

They live beside the built-in agents so that a test (``tests/test_adversarial.py``) and a
benchmark (``bench/bench_adversarial.py``) can play them on every task and prove the score
cannot be gamed. None of them is offered in a sweep's default grid; ``make_adversary`` builds one.

* ``submit_now``: submits at once.
* ``farmer``: opens every document and master table, clears ordinary entries from the listing
  with long rationales citing everything it opened, never flags.
* ``never_flag``: the task's naive rule, with every flag turned into a laundered clear.
* ``laundered_naive``: the naive rule's decisions, laundered: opens every document and master
  table first, cites everything opened on each disposition, pads rationales with figures and
  the entry id, and adds clears of ordinary entries.
* ``surface_rule``: the naive rule, keeping only the flags a listing-only classifier (trained
  on other seeds' labelled worlds) calls defects; the rest become clears. It needs a trained
  model (``SurfaceModel``) and so is built by the test and the benchmark, not by name alone.
* ``flag_key``: a thought experiment with the answer key (it reads the world): opens the
  required evidence, then flags every defect *and every decoy* with the right criteria and the
  right amount. It bounds what a flagged decoy costs.

Every adversary sees only the brief, the tool schemas and the observations, except
``flag_key`` (the key) and ``surface_rule`` (labels of *other* seeds' worlds).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from jeval_ray.protocol import Action, Agent
from jeval_ray.protocol.kit import Step
from jeval_ray.agents._script import Kit, ScriptedAgent, Strategy
from jeval_ray.errors import ConfigError
from jeval_ray.tasks import task_value

ADVERSARIES: tuple[str, ...] = ("submit_now", "farmer", "never_flag", "laundered_naive", "surface_rule", "flag_key")

#: share of the step budget a laundering agent spends opening everything before it decides
_OPEN_SHARE = 0.4
#: evidence ids a disposition may cite (the tool's limit)
_MAX_CITED = 20
_PAD = ("Reviewed against the full support pack, the user, vendor and account master data and the period "
        "calendar; amounts, dates, approvals and references were agreed where applicable.")


def submit_now(kit: Kit):
    """Submits at once, having done nothing."""
    yield from kit.submit("No exceptions noted.")


def _open_everything(kit: Kit, share: float = _OPEN_SHARE) -> Generator[Step, Any, list[str]]:
    """Open master tables and documents until ``share`` of the budget is spent; returns what was opened."""
    stop_at = kit.calls_left * (1 - share)
    opened: list[str] = []
    if kit.has("get_master_data"):
        for table in ("users", "accounts", "vendors", "calendar", "related_parties", "vendor_changes", "customers"):
            if kit.calls_left <= stop_at:
                return opened
            obs = yield from kit.call("get_master_data", table=table, limit=1)
            if "error" not in obs:
                opened.append(f"master:{table}")
    docs = (yield from kit.documents()) if kit.has("list_documents") else []
    for d in docs:
        if kit.calls_left <= stop_at:
            break
        obs = yield from kit.open(d["doc_id"])
        if "error" not in obs:
            opened.append(d["doc_id"])
    return opened


def _padded(entry_id: str, rationale: str, facts: str = "") -> str:
    return f"Entry {entry_id}: {rationale} {facts} {_PAD} Entry {entry_id} reviewed in full.".strip()


def _listing(kit: Kit, n: int) -> Generator[Step, Any, list[dict]]:
    obs = yield from kit.call("query_ledger", filters=[{"column": "line_no", "op": "eq", "value": 1}],
                              columns=["entry_id", "posting_date", "debit", "reference"], limit=max(1, n))
    return obs.get("rows", [])


def _clear_ordinary(kit: Kit, rows: list[dict], opened: list[str], disposed: set[str], keep: int = 1):
    """Clear listing entries not yet disposed of, with padded rationales citing everything opened."""
    for r in rows:
        if kit.calls_left <= keep:
            return
        eid = r["entry_id"]
        if eid in disposed:
            continue
        disposed.add(eid)
        facts = f"Amount {float(r.get('debit') or 0):,.2f} posted {r.get('posting_date')} under {r.get('reference')}."
        yield from kit.clear(eid, opened[:_MAX_CITED], _padded(eid, "no exception noted.", facts))


def farmer(kit: Kit):
    """Opens everything, clears ordinary-looking entries with long rationales, never flags."""
    opened = yield from _open_everything(kit)
    rows = yield from _listing(kit, kit.calls_left)
    yield from _clear_ordinary(kit, rows, opened, set())
    yield from kit.submit("All entries examined were supported; no exceptions.")


Rewrite = Callable[[Kit, Action, list[str], set[str]], Action | None]


def _wrap(inner_for: Callable[[Kit], Generator[Step, Any, None]], rewrite: Rewrite, *, launder: bool,
          extra_clears: bool) -> Strategy:
    """A strategy that drives ``inner`` (e.g. the naive rule) and rewrites its dispositions."""

    def strategy(kit: Kit):
        kit.parallel = False  # one call per reply: the rewrite sees each of the inner strategy's calls alone
        opened = (yield from _open_everything(kit)) if launder else []
        disposed: set[str] = set()
        inner = inner_for(kit)
        try:
            action = next(inner)
            while True:
                if action.tool == "submit" and extra_clears:
                    rows = yield from _listing(kit, max(1, kit.calls_left // 2))
                    yield from _clear_ordinary(kit, rows, opened, disposed, keep=1)
                if action.tool in ("flag_entry", "clear_entry") and isinstance(action.args, dict):
                    disposed.add(str(action.args.get("entry_id")))
                    action = rewrite(kit, action, opened, disposed) or action
                obs = yield action
                action = inner.send(obs)
        except StopIteration:
            return

    return strategy


def _launder_args(action: Action, opened: list[str]) -> dict[str, Any]:
    a = dict(action.args)
    cited = list(dict.fromkeys([*a.get("evidence", []), *opened]))[:_MAX_CITED]
    a["evidence"] = cited
    a["rationale"] = _padded(str(a.get("entry_id")), str(a.get("rationale", "")))
    return a


def _launder(kit: Kit, action: Action, opened: list[str], disposed: set[str]) -> Action:
    return Action(action.tool, _launder_args(action, opened), action.call_id)


def _flag_to_clear(kit: Kit, action: Action, opened: list[str], disposed: set[str]) -> Action:
    a = _launder_args(action, opened)
    if action.tool == "flag_entry":
        a = {"entry_id": a["entry_id"], "evidence": a["evidence"],
             "rationale": a["rationale"].replace("flag", "review") + " Supported; no exception."}
        return Action("clear_entry", a, action.call_id)
    return Action(action.tool, a, action.call_id)


def _naive(kit: Kit):
    return task_value(kit.task_id).naive(kit)


laundered_naive: Strategy = _wrap(_naive, _launder, launder=True, extra_clears=True)
never_flag: Strategy = _wrap(_naive, _flag_to_clear, launder=True, extra_clears=True)


def surface_rule(model: "SurfaceModel") -> Strategy:
    """The naive rule, keeping only the flags ``model`` calls defects from the entry's listing alone."""

    def rewrite(kit: Kit, action: Action, opened: list[str], disposed: set[str]) -> Action:
        if action.tool != "flag_entry":
            return action
        return action if model.is_defect(str(action.args.get("entry_id"))) else Action(
            "clear_entry", {"entry_id": action.args["entry_id"], "evidence": list(action.args.get("evidence", [])),
                            "rationale": "Looks like the legitimate kind of this pattern."}, action.call_id)

    return _wrap(_naive, rewrite, launder=False, extra_clears=False)


class SurfaceModel:
    """A listing-only defect-vs-decoy classifier bound to one world's listing (see ``jeval_ray.scoring.leakage``)."""

    def __init__(self, scores: dict[str, float], threshold: float = 0.5):
        self.scores = scores
        self.threshold = threshold

    def is_defect(self, entry_id: str) -> bool:
        return self.scores.get(entry_id, 1.0) >= self.threshold


def flag_key(world) -> Strategy:
    """Flags every defect and every decoy with the right criteria and amount, after opening its evidence."""

    def strategy(kit: Kit):
        # a decoy is flagged under the code of the defects it imitates (the first defect's, or the brief's first)
        decoy_crit = world.defects[0].criteria if world.defects else (kit.criteria() or ["X"])[0]
        targets = [(d.entry_id, d.criteria, d.required_evidence, d.misstatement, d.facts) for d in world.defects]
        targets += [(d.entry_id, decoy_crit, d.clearing_evidence, None, d.facts) for d in world.decoys]
        opened: set[str] = set()
        for eid, crit, evidence, amount, facts in sorted(targets):
            for ev in evidence:
                if ev in opened or kit.calls_left <= 2:
                    continue
                if ev.startswith("master:"):
                    yield from kit.call("get_master_data", table=ev.split(":", 1)[1], limit=1)
                elif ev.startswith("DOC-"):
                    yield from kit.open(ev)
                elif ev in world.hidden_entries:
                    continue
                else:
                    yield from kit.call("get_entry", entry_id=ev)
                opened.add(ev)
            if kit.calls_left <= 1:
                break
            cited = [e for e in evidence if e in opened]
            text = f"Exception on entry {eid}: " + "; ".join(facts or ())
            yield from kit.flag(eid, crit, cited, text, amount if amount is not None else None)
        yield from kit.submit("Flagged every entry matching the engagement's criteria.")

    return strategy


_BY_NAME: dict[str, Strategy] = {"submit_now": submit_now, "farmer": farmer, "never_flag": never_flag,
                                 "laundered_naive": laundered_naive}


def make_adversary(name: str, seed: int = 0, *, world=None, model: SurfaceModel | None = None) -> Agent:
    """An adversarial test agent by name; ``flag_key`` needs ``world``, ``surface_rule`` a ``model``."""
    if name == "flag_key":
        if world is None:
            raise ConfigError("the flag_key adversary needs the world (it plays with the answer key)")
        return ScriptedAgent(name, lambda _task: flag_key(world), seed)
    if name == "surface_rule":
        if model is None:
            raise ConfigError("the surface_rule adversary needs a trained SurfaceModel")
        return ScriptedAgent(name, lambda _task: surface_rule(model), seed)
    if name not in _BY_NAME:
        raise ConfigError(f"unknown adversary {name!r}; choose one of {', '.join(ADVERSARIES)}")
    strategy = _BY_NAME[name]
    return ScriptedAgent(name, lambda _task: strategy, seed)


__all__ = ["ADVERSARIES", "SurfaceModel", "make_adversary"]
