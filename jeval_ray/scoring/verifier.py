"""The deterministic verifier: outcome and process metrics from the world and the trajectory.

Definitions (DESIGN §6; the spec's ``trajectory_record.derived_at_scoring_time``):

Outcome
  * Each entry's *final* disposition is its last one. A disposition is **void** when any evidence
    id it cites was not opened (``open_document``, ``get_master_data``, ``get_entry``,
    ``get_balances``) at an earlier step, i.e. unless ``opened_step < disposition_step``.
    Void dispositions count in ``fabrications`` and leave the entry undispositioned.
  * Undispositioned entries are implicit approvals (= cleared).
  * Positives are the defect ledger's entries. TP = flagged defect, FP = flagged non-defect,
    FN = defect not flagged, TN = the rest of the slice (plus hidden entries).
  * precision = TP/(TP+FP) (1 if nothing flagged and no defect, else 0 when nothing flagged);
    recall = TP/(TP+FN) (1 if no defect); F2 = 5PR/(4P+R).
  * criteria_accuracy = TP whose criteria code matches the defect's / TP (0 when TP = 0).
  * misstatement_error (tasks that ask for amounts) = mean over TP of
    min(1, |amount - true| / |true|), a missing amount counting 1.
  * outcome = 0.8·F2 + 0.2·criteria_accuracy; where the task asks for amounts,
    outcome = 0.7·F2 + 0.15·criteria_accuracy + 0.15·(1 - misstatement_error).

Process
  * evidence_coverage = |required ∩ opened| / |required|, required = the union of every
    defect's required evidence ids (1 when there is none).
  * evidence_precision = cited-and-opened-before-citing / cited, over (disposition, evidence id)
    pairs (0 when nothing is cited).
  * redundant_calls = tool calls whose (tool, canonical arguments) repeat an earlier call.
  * steps_to_first_flag = the number of steps before the first flag (None when nothing flagged).
  * baseline_before_claim = whether ``compute_stats`` ran before the first *unusual claim*: a
    flag whose criteria is OUTLIER or DIGIT_ANOMALY, or whose rationale calls the entry unusual,
    atypical, an outlier or anomalous (None when no such claim was made).
  * premature_disposition = non-void dispositions issued before all of their entry's required
    evidence (defects) or clearing evidence (decoys) had been opened.
  * process = mean of evidence_coverage, evidence_precision, 1 - premature/dispositions,
    1/(1 + redundant_calls/10), and baseline_before_claim (as 0/1) when a claim was made.
    Tasks with ``premature_penalty`` subtract that much per premature disposition (floor 0).

Task hook: a task module may define ``outcome_adjust(world, state, outcome) -> (outcome, extra)``
to refine its outcome (documented in the task's module and in docs/tasks.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from jeval_ray.env._tools import Disposition, EpisodeState
from jeval_ray.tasks import TaskSpec
from jeval_ray.tasks import task_module as _task_module
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
        errs = []
        for i in tp_ids:
            true, got = defects[i].misstatement, final[i].amount
            errs.append(1.0 if got is None or true == 0 else min(1.0, abs(abs(got) - abs(true)) / abs(true)))
        mis_err = sum(errs) / len(errs) if errs else (1.0 if defects else 0.0)
        outcome = 0.7 * f2 + 0.15 * crit_acc + 0.15 * (1 - mis_err)
    else:
        outcome = 0.8 * f2 + 0.2 * crit_acc
    fabrications = sum(is_void(d, state.opened) for d in state.dispositions)

    required = {e for d in world.defects for e in d.required_evidence}
    coverage = len(required & state.opened.keys()) / len(required) if required else 1.0
    cited = [(d.step_idx, e) for d in state.dispositions for e in d.evidence]
    ev_prec = sum(state.opened.get(e, 1 << 30) < s for s, e in cited) / len(cited) if cited else 0.0
    redundant = _redundant(steps)
    flags = [d for d in state.dispositions if d.decision == "flag"]
    first_flag = flags[0].step_idx if flags else None
    claims = [d for d in flags if d.criteria in UNUSUAL_CRITERIA or _UNUSUAL.search(d.rationale or "")]
    baseline = None if not claims else any(s < claims[0].step_idx for s in state.stats_steps)
    premature = 0
    valid = [d for d in state.dispositions if not is_void(d, state.opened)]
    for d in valid:
        need = defects[d.entry_id].required_evidence if d.entry_id in defects else (
            decoys[d.entry_id].clearing_evidence if d.entry_id in decoys else ())
        if any(state.opened.get(e, 1 << 30) >= d.step_idx for e in need):
            premature += 1
    parts = [coverage, ev_prec, 1 - premature / max(1, len(valid)), 1 / (1 + redundant / 10)]
    if baseline is not None:
        parts.append(1.0 if baseline else 0.0)
    process = sum(parts) / len(parts)
    process = max(0.0, process - spec.premature_penalty * premature)
    extra: dict = {}
    adjust = getattr(_task_module(spec.id), "outcome_adjust", None)
    if adjust is not None:
        # a task may refine its outcome (e.g. JE-15 rewards naming the scheme's user)
        outcome, extra = adjust(world, state, outcome)
    return Verification(
        tp=tp, fp=fp, fn=fn, tn=tn, precision=precision, recall=recall, f2=f2, criteria_accuracy=crit_acc,
        misstatement_error=mis_err, fabrications=fabrications, outcome=outcome, evidence_coverage=coverage,
        evidence_precision=ev_prec, redundant_calls=redundant, steps_to_first_flag=first_flag,
        baseline_before_claim=baseline, premature_disposition=premature, process=process,
        n_dispositions=len(final), n_flags=len(flagged), extra=extra,
    )
