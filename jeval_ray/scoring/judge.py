"""Judging: the judge packet (what a judge sees), judgments, and the deterministic reference judge.

A judge sees the brief, the dispositions with their rationales, the text of the documents the
agent cited, and the reference facts of the entries it disposed of. The packet is plain JSON so
a judge pool on another node, or an LLM judge, can score it without the world object.
"""

from __future__ import annotations

import re
import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from jeval_ray.env._tools import EpisodeState
from jeval_ray.scoring.rubric import load_rubric, rubric_items
from jeval_ray.scoring.verifier import is_void
from jeval_ray.tasks import TaskSpec
from jeval_ray.world import World

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


class DispositionScore(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entry_id: str
    scores: dict[str, int]
    dealbreaker: str | None = None
    comment: str = ""


class Judgment(BaseModel):
    """One judge's verdict on one episode (strict JSON; LLM judges must produce this shape).

    ``status``: ``ok`` (scored), ``unscored`` (an LLM judge gave no valid answer within its re-asks,
    its endpoint failed for good, or the judge budget was spent: ``error`` says which; never scored
    as zero) or ``failed`` (the judge function raised or its worker died). Only ``ok`` judgments
    enter the median. The remaining fields are the LLM judge's accounting (zero for the reference
    judge), kept apart from the agent's.
    """

    model_config = ConfigDict(extra="forbid")
    judge: str
    rubric: str = "global_rubric_v1"
    status: Literal["ok", "unscored", "failed"] = "ok"
    dispositions: list[DispositionScore] = Field(default_factory=list)
    rationale_score: float | None = 0.0
    overall_comment: str = ""
    error: str | None = None
    judge_model: str | None = None
    prompt_hash: str | None = None
    judge_seed: int | None = None
    calls: int = 0
    reasks: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    reference_item_scores: str | None = None

    def as_record(self) -> dict:
        """The judgment as the flat fields of its ``judgments`` row, item scores as one JSON string.

        This is what a judge worker sends back: the driver writes it as it is, without building and
        validating the model a second time.
        """
        return {"judge": self.judge, "rubric": self.rubric, "status": self.status, "rationale_score": self.rationale_score,
                "item_scores": _ITEM_SCORES.dump_json(self.dispositions).decode(), "overall_comment": self.overall_comment,
                "error": self.error, "judge_model": self.judge_model, "prompt_hash": self.prompt_hash,
                "judge_seed": self.judge_seed, "calls": self.calls, "reasks": self.reasks, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cost_usd": self.cost_usd, "latency_ms": self.latency_ms,
                "reference_item_scores": self.reference_item_scores}


#: item scores as JSON in one pydantic-core call (not a model_dump per item plus json.dumps)
_ITEM_SCORES = TypeAdapter(list[DispositionScore])


def build_judge_packet(spec: TaskSpec, world: World, state: EpisodeState, brief: str) -> dict:
    """Everything a judge may see, as JSON-able data."""
    defects = {d.entry_id: d for d in world.defects}
    decoys = {d.entry_id: d for d in world.decoys}
    disps = []
    cited_docs: dict[str, str] = {}
    for d in state.dispositions:
        ref = {"is_exception": d.entry_id in defects}
        if d.entry_id in defects:
            x = defects[d.entry_id]
            ref.update(criteria=x.criteria, required_evidence=list(x.required_evidence), misstatement=x.misstatement)
        elif d.entry_id in decoys:
            ref.update(clearing_evidence=list(decoys[d.entry_id].clearing_evidence))
        disps.append({
            "step_idx": d.step_idx, "entry_id": d.entry_id, "decision": d.decision, "criteria": d.criteria,
            "evidence": list(d.evidence), "rationale": d.rationale, "amount": d.amount,
            "fabricated": is_void(d, state.opened), "reference": ref,
        })
        for e in d.evidence:
            doc = world.document(e)
            if doc is not None and e not in cited_docs:
                cited_docs[e] = f"{doc.title}\n{doc.body}"
    return {"task_id": spec.id, "tier": spec.tier, "asks_amount": spec.asks_amount, "brief": brief,
            "dispositions": disps, "cited_documents": cited_docs, "summary": state.summary}


def reference_judge(packet: dict, rubric_id: str = "global_rubric_v1") -> Judgment:
    """Apply the rubric mechanically (offline runs and calibration of LLM judges)."""
    items = rubric_items(rubric_id)
    load_rubric(rubric_id)
    scored = []
    for d in packet["dispositions"]:
        ref = d["reference"]
        rationale = d.get("rationale") or ""
        if d["fabricated"]:
            scored.append(DispositionScore(entry_id=d["entry_id"], scores={i: 0 for i in items},
                                           dealbreaker="fabricated_evidence", comment="cites evidence it had not opened"))
            continue
        cited = set(d["evidence"])
        need = set(ref.get("required_evidence") or ref.get("clearing_evidence") or [])
        if d["decision"] == "flag":
            crit = 4 if ref["is_exception"] and d["criteria"] == ref.get("criteria") else (2 if ref["is_exception"] else 0)
        else:
            crit = 0 if ref["is_exception"] else (4 if (not need or need & cited) else 2)
        # nothing required (an ordinary entry examined and cleared): citing what was opened is enough
        ev = 4 if (need and need <= cited) or (not need and cited) else (2 if need & cited else 0)
        has_source = any(e.startswith(("DOC-", "master:")) for e in cited)
        scep = (2 if has_source else 0) + (2 if len(rationale) >= 40 else 0)
        figures = len(_NUMBER.findall(rationale))
        quant = 4 if figures >= 2 else (2 if figures == 1 else 0)
        if packet.get("asks_amount") and d["decision"] == "flag" and ref["is_exception"]:
            true, got = ref.get("misstatement") or 0, d.get("amount")
            quant = min(quant, 4 if got is not None and true and abs(abs(got) - abs(true)) <= 0.01 * abs(true) else 2)
        clar = 4 if 40 <= len(rationale) <= 1500 and d["entry_id"] in rationale else (2 if rationale.strip() else 0)
        vals = dict(zip(items, (crit, ev, scep, quant, clar)))
        scored.append(DispositionScore(entry_id=d["entry_id"], scores=vals))
    per = [sum(s.scores.values()) / (4 * len(items)) for s in scored]
    score = statistics.fmean(per) if per else 0.0
    return Judgment(judge="reference", rubric=rubric_id, dispositions=scored, rationale_score=score,
                    overall_comment=f"{len(scored)} dispositions scored mechanically")


def aggregate_judgments(judgments: list[Judgment] | list[dict]) -> dict:
    """Median of the successful judges' rationale scores, with their spread, failures and unscored judgments.

    ``judgments``: ``Judgment`` models or their records (``Judgment.as_record``).
    """
    pairs = [(j["status"], j["rationale_score"]) if isinstance(j, dict) else (j.status, j.rationale_score) for j in judgments]
    ok = [score for status, score in pairs if status == "ok"]
    return {
        "rationale": statistics.median(ok) if ok else None,
        "judge_spread": (max(ok) - min(ok)) if ok else None,
        "judges_ok": len(ok),
        "judges_failed": sum(status == "failed" for status, _ in pairs),
        "judges_unscored": sum(status == "unscored" for status, _ in pairs),
    }
