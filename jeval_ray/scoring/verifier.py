"""The deterministic verifier: outcome and process metrics from the world and the trajectory.

Definitions (``docs/scoring.md`` states them with the reasons):

Outcome
  * Each entry's *final* disposition is its last one. A disposition is **void** when any evidence
    id it cites was not opened (``open_document``, ``get_master_data``, ``get_entry``,
    ``get_balances``) at an earlier step, i.e. unless ``opened_step < disposition_step``.
    Void dispositions count in ``fabrications`` and leave the entry undispositioned.
  * Undispositioned entries are implicit approvals (= cleared).
  * Positives are the defect ledger's entries. TP = flagged defect, FP = flagged non-defect,
    FN = defect not flagged, TN = the rest of the slice (plus hidden entries).
  * precision, recall, F2 and criteria_accuracy are recorded as before.
  * outcome = (sum of TP credits) / (TP + FP + FN): the share of the entries that are either
    reported or real exceptions that the auditor got right, so a false exception costs exactly
    what a missed one costs (1 when there is nothing to find and nothing is flagged). A TP's
    credit is 1, halved when its criteria code is wrong; where the task asks for the amount of the
    defect's criteria (a misstatement, ``TaskSpec.amount_asked``) it is further scaled by
    0.5 + 0.5 x (1 - the amount's relative error, capped at 1), the error taken against the nearest
    of the key's accepted amounts. A control deviation's amount is never scored: one given is ignored.

Process (the environment's six metrics, docs/environment_spec.md, are recorded as defined; ``process``
  combines them per entry)
  * evidence_coverage = |required ∩ opened| / |required| over every defect's required evidence.
  * evidence_precision = cited ids that were opened before the citing step *and bear on the
    entry* / cited ids, over every disposition (0 when nothing is cited). An id bears on an
    entry when it is that entry's required or clearing evidence, the entry itself, a master
    table some planted entry needs, or a document whose text names the entry's id, reference
    or vendor.
  * redundant_calls = tool calls whose (tool, canonical arguments) repeat an earlier call.
  * steps_to_first_flag = the number of steps before the first flag (None when nothing flagged).
  * baseline_before_claim = whether a ``compute_stats`` call that returned statistics (not
    "population too small") ran before the first *unusual claim*: a flag whose criteria is
    OUTLIER or DIGIT_ANOMALY, or whose rationale calls the entry unusual, atypical, an outlier
    or anomalous (None when no such claim was made).
  * premature_disposition = non-void dispositions issued before all of their entry's required
    evidence (defects) or clearing evidence (decoys) had been opened.
  * process = max(0, sum of the evidence quality of the planted entries whose final disposition is
    right (a flagged defect, a decoy not flagged) - misreads) / planted entries. Evidence quality is
    (needed evidence cited and opened before / needed) x (cited ids opened before and bearing on the
    entry / cited), and 0 unless a decisive id (``decisive_evidence``) is cited. A misread is a decoy
    finally flagged citing its decisive id or after opening it (``misreads``): reading what clears it
    and flagging anyway costs a whole entry, so opening a document and ignoring it never pays more
    than not opening it. Multiplied by 1 / (1 + redundant_calls / 20), halved when an unusual claim
    came before any baseline, and reduced by ``premature_penalty`` per premature disposition of an
    entry decided right, where the task sets one (floor 0). Dispositions of ordinary entries earn no
    process credit.

Task hook: a task module may define ``outcome_adjust(world, state, outcome, final) -> (outcome, extra)``
(``final``: ``final_dispositions(state)``) to refine its outcome (documented in the task's module and
in docs/tasks.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

import pyarrow.compute as pc

from jeval_ray.tools._tools import Disposition, EpisodeState
from jeval_ray.tasks import TaskSpec
from jeval_ray.tasks import task_value
from jeval_ray.world import World

UNUSUAL_CRITERIA = {"OUTLIER", "DIGIT_ANOMALY"}
_UNUSUAL = re.compile(r"\b(unusual|atypical|outlier|anomal\w*)\b", re.I)


@dataclass
class Verification:
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float
    recall: float
    f2: float
    criteria_accuracy: float
    misstatement_error: float | None
    fabrications: int
    outcome: float
    evidence_coverage: float
    evidence_precision: float
    redundant_calls: int
    steps_to_first_flag: int | None
    baseline_before_claim: bool | None
    premature_disposition: int
    process: float
    n_dispositions: int
    n_flags: int
    extra: dict = field(default_factory=dict)  # task-specific metrics from ``outcome_adjust``

    def as_dict(self) -> dict:
        return asdict(self)


def is_void(d: Disposition, opened: dict[str, int]) -> bool:
    """A disposition citing anything not opened strictly before its step is fabricated."""
    return any(opened.get(e, 1 << 30) >= d.step_idx for e in d.evidence)


def final_dispositions(state: EpisodeState) -> dict[str, Disposition]:
    """Each entry's last disposition, or nothing when that one is void."""
    last: dict[str, Disposition] = {}
    for d in state.dispositions:
        last[d.entry_id] = d
    return {k: d for k, d in last.items() if not is_void(d, state.opened)}


def _redundant(steps) -> int:
    seen: set[tuple[str, str]] = set()
    n = 0
    for s in steps:
        if not s.tool or s.tool == "submit":
            continue
        try:
            key = (s.tool, json.dumps(json.loads(s.args), sort_keys=True))
        except (json.JSONDecodeError, TypeError):
            key = (s.tool, s.args)
        if key in seen:
            n += 1
        seen.add(key)
    return n


def _f2(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 5 * p * r / (4 * p + r)


def _evidence_of(rec) -> tuple[str, ...]:
    """A key record's evidence: a defect's required evidence, a decoy's clearing evidence."""
    return rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence


def _index(world: World) -> dict:
    """What the scorer looks up in a world, built once per world (the world is frozen; ``_memo`` is
    its scorer-side cache): the key records by entry, the master tables any planted entry needs,
    the vendors' names, the hidden entries, each document's lower-cased text, and the memo of
    ``bearing_evidence``."""
    idx = world._memo.get("scoring")
    if idx is None:
        key = {d.entry_id: d for d in world.decoys}
        key.update({d.entry_id: d for d in world.defects})
        idx = world._memo["scoring"] = {
            "key": key,
            "masters": frozenset(e for r in key.values() for e in _evidence_of(r) if e.startswith("master:")),
            "vendor_names": {v["vendor_id"]: v.get("name") or "" for v in world.master["vendors"].to_pylist()},
            "hidden": frozenset(world.hidden_entries),
            "texts": [(d.doc_id, f"{d.title}\n{d.body}".lower()) for d in world.documents],
            "bears": {},
        }
    return idx


def needed_evidence(world: World, entry_id: str) -> tuple[str, ...]:
    """The evidence a planted entry needs (required for a defect, clearing for a decoy), less what
    cannot be opened (an entry missing from the listing)."""
    idx = _index(world)
    rec = idx["key"].get(entry_id)
    return () if rec is None else tuple(e for e in _evidence_of(rec) if e not in idx["hidden"])


def bearing_evidence(world: World, entry_id: str) -> frozenset[str]:
    """Evidence ids that bear on an entry (see the module docstring); memoised per world."""
    idx = _index(world)
    memo = idx["bears"]
    if entry_id in memo:
        return memo[entry_id]
    rec = idx["key"].get(entry_id)
    ids = {entry_id, *idx["masters"], *(_evidence_of(rec) if rec is not None else ())}
    words = {entry_id}
    if entry_id not in idx["hidden"]:
        led = world.ledger
        head = led.filter(pc.equal(led.column("entry_id"), entry_id)).slice(0, 1).to_pylist()
        if head:
            vid = head[0].get("vendor_id") or ""
            words.update((head[0].get("reference") or "", vid, idx["vendor_names"].get(vid, "")))
    low = [w.lower() for w in words if w]
    ids.update(doc_id for doc_id, text in idx["texts"] if any(w in text for w in low))
    memo[entry_id] = frozenset(ids)
    return memo[entry_id]


def decisive_evidence(world: World, entry_id: str) -> tuple[str, ...]:
    """The ids that decide a planted entry: its needed evidence that its key's decisive facts name (the
    document whose figure, date or person decides); else its needed documents; else (an entry that
    needs no document, JE-3/JE-4) its needed evidence (the master table)."""
    idx = _index(world)
    need = needed_evidence(world, entry_id)
    rec = idx["key"].get(entry_id)
    named = tuple(e for e in need if rec is not None and e in rec.facts)
    return named or tuple(e for e in need if e.startswith("DOC-")) or need


def evidence_quality(world: World, d: Disposition, opened: dict[str, int]) -> float:
    """The share of the needed evidence cited (opened before) times the share of the cited evidence that
    bears on the entry; 0 unless a decisive id (``decisive_evidence``) is among the cited ones."""
    need = needed_evidence(world, d.entry_id)
    before = [e for e in d.evidence if opened.get(e, 1 << 30) < d.step_idx]
    if not d.evidence:
        return 0.0 if need else 1.0
    decisive = decisive_evidence(world, d.entry_id)
    if decisive and not any(e in decisive for e in before):
        return 0.0
    bears = bearing_evidence(world, d.entry_id)
    precision = sum(e in bears for e in before) / len(d.evidence)
    recall = (sum(e in before for e in need) / len(need)) if need else 1.0
    return recall * precision


def misreads(world: World, final: dict[str, Disposition], opened: dict[str, int]) -> list[str]:
    """The decoys flagged after their clearing document was read: a final (non-void) flag of a decoy
    that cites one of its decisive ids, or issued after one was opened."""
    out = []
    for rec in world.decoys:
        d = final.get(rec.entry_id)
        if d is None or d.decision != "flag":
            continue
        if any(e in d.evidence or opened.get(e, 1 << 30) < d.step_idx for e in decisive_evidence(world, rec.entry_id)):
            out.append(rec.entry_id)
    return out


def amount_error(defect, got: float | None) -> float:
    """A stated amount's relative error against the nearest amount the key accepts for ``defect``
    (capped at 1; a missing amount, or a defect whose amounts are all 0, counts 1)."""
    errs = [min(1.0, abs(abs(got) - abs(true)) / abs(true)) for true in defect.accepted_amounts
            if got is not None and true != 0]
    return min(errs, default=1.0)


def _credit(spec: TaskSpec, disp: Disposition, defect) -> float:
    """A true positive's share of credit: halved for a wrong criteria code; scaled by the amount's error
    where the defect's criteria is a misstatement whose amount the task asks for."""
    c = 1.0 if disp.criteria == defect.criteria else 0.5
    if spec.amount_asked(defect.criteria):
        c *= 0.5 + 0.5 * (1 - amount_error(defect, disp.amount))
    return c


def correct_final(world: World, final: dict[str, Disposition]) -> dict[str, Disposition]:
    """The planted entries whose final disposition is right: a flagged defect, a cleared decoy."""
    defects = {d.entry_id for d in world.defects}
    out = {}
    for rec in _index(world)["key"].values():
        d = final.get(rec.entry_id)
        if d is None:
            continue
        if (rec.entry_id in defects) == (d.decision == "flag"):
            out[rec.entry_id] = d
    return out


def verify(spec: TaskSpec, world: World, state: EpisodeState, steps) -> Verification:
    defects = {d.entry_id: d for d in world.defects}
    decoys = {d.entry_id: d for d in world.decoys}
    universe = world.n_entries + len(world.hidden_entries)
    final = final_dispositions(state)
    flagged = {k for k, d in final.items() if d.decision == "flag"}
    tp_ids = flagged & defects.keys()
    tp, fp = len(tp_ids), len(flagged - defects.keys())
    fn = len(defects) - tp
    tn = universe - tp - fp - fn
    precision = (tp / (tp + fp)) if flagged else (1.0 if not defects else 0.0)
    recall = tp / len(defects) if defects else 1.0
    f2 = _f2(precision, recall)
    crit_acc = (sum(final[i].criteria == defects[i].criteria for i in tp_ids) / tp) if tp else (0.0 if defects else 1.0)
    mis_err = None
    if spec.asks_amount:
        # over the true positives whose amount is scored (misstatements); deviations have none
        errs = [amount_error(defects[i], final[i].amount) for i in sorted(tp_ids) if spec.amount_asked(defects[i].criteria)]
        scored = any(spec.amount_asked(d.criteria) for d in defects.values())
        mis_err = sum(errs) / len(errs) if errs else (1.0 if scored else 0.0)
    union = tp + fp + fn
    outcome = (sum(_credit(spec, final[i], defects[i]) for i in tp_ids) / union) if union else 1.0
    fabrications = sum(is_void(d, state.opened) for d in state.dispositions)

    required = {e for d in world.defects for e in d.required_evidence}
    coverage = len(required & state.opened.keys()) / len(required) if required else 1.0
    cited = [(d, e) for d in state.dispositions for e in d.evidence]
    ev_prec = (sum(state.opened.get(e, 1 << 30) < d.step_idx and e in bearing_evidence(world, d.entry_id)
                   for d, e in cited) / len(cited)) if cited else 0.0
    redundant = _redundant(steps)
    flags = [d for d in state.dispositions if d.decision == "flag"]
    first_flag = flags[0].step_idx if flags else None
    claims = [d for d in flags if d.criteria in UNUSUAL_CRITERIA or _UNUSUAL.search(d.rationale or "")]
    baseline = None if not claims else any(s < claims[0].step_idx for s in state.stats_steps)
    right = correct_final(world, final)
    premature = premature_right = 0
    valid = [d for d in state.dispositions if not is_void(d, state.opened)]
    for d in valid:
        if any(state.opened.get(e, 1 << 30) >= d.step_idx for e in needed_evidence(world, d.entry_id)):
            premature += 1
            premature_right += d.entry_id in right
    key_n = len(defects.keys() | decoys.keys())
    misread = misreads(world, final, state.opened)
    if key_n:
        # a decoy flagged after reading what clears it costs a whole entry's credit (docs/scoring.md)
        process = max(0.0, sum(evidence_quality(world, d, state.opened) for d in right.values()) - len(misread)) / key_n
    else:
        process = 1.0
    process *= 1 / (1 + redundant / 20)
    if baseline is False:
        process *= 0.5
    # only dispositions of entries decided right are charged as premature: on a wrong decision the
    # outcome already pays, and opening the evidence must never lower a cost (it would pay to read and ignore)
    process = max(0.0, process - spec.premature_penalty * premature_right)
    extra: dict = {}
    adjust = task_value(spec.id).outcome_adjust
    if adjust is not None:
        # a task may refine its outcome (e.g. JE-15 rewards naming the scheme's user)
        outcome, extra = adjust(world, state, outcome, final)
    return Verification(
        tp=tp, fp=fp, fn=fn, tn=tn, precision=precision, recall=recall, f2=f2, criteria_accuracy=crit_acc,
        misstatement_error=mis_err, fabrications=fabrications, outcome=outcome, evidence_coverage=coverage,
        evidence_precision=ev_prec, redundant_calls=redundant, steps_to_first_flag=first_flag,
        baseline_before_claim=baseline, premature_disposition=premature, process=process,
        n_dispositions=len(final), n_flags=len(flagged), extra=extra,
    )
