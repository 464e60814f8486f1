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

from jeval_ray.tools._tools import EpisodeState
from jeval_ray.scoring.rubric import load_rubric, rubric_items
from jeval_ray.scoring.verifier import is_void, needed_evidence
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
    #: the judge's own version (the reference judge's rules, an LLM judge's prompt): old runs stay comparable
    judge_version: str | None = None
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
    #: the structured-output mode of the request that answered (json_schema, json_object, instructions)
    structured_output: str | None = None

    def as_record(self) -> dict:
        """The judgment as the flat fields of its ``judgments`` row, item scores as one JSON string.

        This is what a judge worker sends back: the driver writes it as it is, without building and
        validating the model a second time.
        """
        return {"judge": self.judge, "rubric": self.rubric, "judge_version": self.judge_version, "status": self.status, "rationale_score": self.rationale_score,
                "item_scores": _ITEM_SCORES.dump_json(self.dispositions).decode(), "overall_comment": self.overall_comment,
                "error": self.error, "judge_model": self.judge_model, "prompt_hash": self.prompt_hash,
                "judge_seed": self.judge_seed, "calls": self.calls, "reasks": self.reasks, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cost_usd": self.cost_usd, "latency_ms": self.latency_ms,
                "reference_item_scores": self.reference_item_scores, "structured_output": self.structured_output}


#: item scores as JSON in one pydantic-core call (not a model_dump per item plus json.dumps)
_ITEM_SCORES = TypeAdapter(list[DispositionScore])


def build_judge_packet(spec: TaskSpec, world: World, state: EpisodeState, brief: str) -> dict:
    """Everything a judge may see, as JSON-able data.

    ``dispositions`` lists every disposition in order (the records need them all), each marked
    ``is_final`` when it is its entry's last; judges judge the final ones only. A disposition's
    ``reference`` is the scorer-side truth: whether the entry is an exception, whether it was
    planted (a defect or a decoy), its criteria, the evidence it needs, its decisive facts and
    its misstatement, and whether this decision is right.
    """
    defects = {d.entry_id: d for d in world.defects}
    decoys = {d.entry_id: d for d in world.decoys}
    last = {d.entry_id: i for i, d in enumerate(state.dispositions)}
    disps = []
    cited_docs: dict[str, str] = {}
    for i, d in enumerate(state.dispositions):
        ref: dict = {"is_exception": d.entry_id in defects, "planted": d.entry_id in defects or d.entry_id in decoys,
                     "correct": (d.entry_id in defects) == (d.decision == "flag")}
        if d.entry_id in defects:
            x = defects[d.entry_id]
            ref.update(criteria=x.criteria, required_evidence=list(x.required_evidence), misstatement=x.misstatement,
                       facts=list(x.facts), amount_asked=spec.amount_asked(x.criteria))
            if x.also_accepted:
                ref["accepted_amounts"] = list(x.accepted_amounts)
        elif d.entry_id in decoys:
            ref.update(clearing_evidence=list(decoys[d.entry_id].clearing_evidence), facts=list(decoys[d.entry_id].facts))
        ref["needed_evidence"] = list(needed_evidence(world, d.entry_id))
        disps.append({
            "step_idx": d.step_idx, "entry_id": d.entry_id, "decision": d.decision, "criteria": d.criteria,
            "evidence": list(d.evidence), "rationale": d.rationale, "amount": d.amount,
            "fabricated": is_void(d, state.opened), "is_final": last[d.entry_id] == i, "reference": ref,
        })
        for e in d.evidence:
            doc = world.document(e)
            if doc is not None and e not in cited_docs:
                cited_docs[e] = f"{doc.title}\n{doc.body}"
    return {"task_id": spec.id, "tier": spec.tier, "asks_amount": spec.asks_amount,
            "amount_criteria": [c.code for c in spec.amount_criteria], "brief": brief,
            "planted_entries": len(defects.keys() | decoys.keys()),
            "dispositions": disps, "cited_documents": cited_docs, "summary": state.summary}


#: the reference judge's own version, recorded in every judgment it makes (``judge_version``)
REFERENCE_JUDGE_VERSION = "reference-2"
_DATE = re.compile(r"\b(\d{4}-\d\d-\d\d)\b")
_ID = re.compile(r"\b(DOC-\d{4}|\d{10}|[A-Z][A-Z0-9_]{3,})\b")
_AMOUNT_FACT = re.compile(r"^-?[\d,]+(?:\.\d+)?$")


def _numbers(text: str) -> list[float]:
    out = []
    for m in _NUMBER.findall(_DATE.sub(" ", text)):
        try:
            out.append(float(m.replace(",", "")))
        except ValueError:
            continue
    return out


def fact_stated(fact: str, rationale: str) -> bool:
    """Whether a rationale states a decisive fact: an amount (to the cent), an ISO date, or a word,
    id or name (case-insensitive, whole word)."""
    f = fact.strip()
    if _AMOUNT_FACT.match(f):
        v = float(f.replace(",", ""))
        return any(abs(x - v) < 0.005 for x in _numbers(rationale))
    return re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", rationale, re.I) is not None


def _claims(rationale: str) -> set[str]:
    """The distinct figures, dates and ids a rationale asserts."""
    out = {f"d:{d}" for d in _DATE.findall(rationale)}
    out |= {f"n:{x:.2f}" for x in _numbers(rationale)}
    out |= {f"i:{i.upper()}" for i in _ID.findall(rationale)}
    return out


def _focus(rationale: str, facts: list[str], entry_id: str) -> float:
    """1, or less when a rationale sprays figures and ids that are not the entry's facts (stuffing)."""
    stated = {c for c in _claims(rationale) if any(fact_stated(f, c.split(":", 1)[1]) for f in facts)}
    noise = len(_claims(rationale) - stated - {f"i:{entry_id}", f"n:{float(entry_id):.2f}" if entry_id.isdigit() else ""})
    allowed = 6 + 2 * len(facts)
    return 1.0 if noise <= allowed else allowed / noise


def _share(facts: list[str], rationale: str) -> float | None:
    return (sum(fact_stated(f, rationale) for f in facts) / len(facts)) if facts else None


def reference_judge(packet: dict, rubric_id: str = "global_rubric_v1") -> Judgment:
    """Apply the rubric mechanically to each entry's final disposition (offline runs, calibration).

    A disposition earns items only when its decision is right (a flagged defect, a decoy not
    flagged) and nothing it cites is fabricated. ``criterion_identified``: the right criteria code
    (flag) or the clearing document named or cited (clear). ``evidence_specific``: the share of
    the needed evidence cited. ``quantification``: the share of the decisive figures and dates
    stated (the amount within 1% of one the key accepts, for a misstatement whose amount the task asks
    for; a control deviation's amount is not judged). ``scepticism``: the share of
    the decisive ids, names and words stated. ``clarity``: all decisive facts stated (4), at least
    half (2). A rationale spraying unrelated figures and ids scores in proportion to its focus.
    The episode's rationale score is the mean, over the planted entries, of their judged share
    (sum of items / (4 x items)); ordinary entries and wrong decisions earn nothing.
    """
    items = rubric_items(rubric_id)
    load_rubric(rubric_id)
    scored = []
    total = 0.0
    for d in packet["dispositions"]:
        if not d.get("is_final", True):
            continue
        ref = d["reference"]
        rationale = d.get("rationale") or ""
        if d["fabricated"]:
            scored.append(DispositionScore(entry_id=d["entry_id"], scores={i: 0 for i in items},
                                           dealbreaker="fabricated_evidence", comment="cites evidence it had not opened"))
            continue
        if not ref.get("planted", True) and d["decision"] == "clear":
            scored.append(DispositionScore(entry_id=d["entry_id"], scores={i: 0 for i in items},
                                           comment="an ordinary entry cleared: no exception to judge"))
            continue
        if not ref.get("correct", (d["decision"] == "flag") == ref["is_exception"]):
            why = "flags an entry that is not an exception" if d["decision"] == "flag" else "clears an exception"
            scored.append(DispositionScore(entry_id=d["entry_id"], scores={i: 0 for i in items}, comment=why))
            continue
        facts = list(ref.get("facts") or [])
        need = list(ref.get("needed_evidence") or ref.get("required_evidence") or ref.get("clearing_evidence") or [])
        cited = set(d["evidence"])
        figures = [f for f in facts if _AMOUNT_FACT.match(f.strip()) or _DATE.fullmatch(f.strip())]
        words = [f for f in facts if f not in figures]
        if d["decision"] == "flag":
            crit = 4 if d["criteria"] == ref.get("criteria") else 2
        else:
            docs = [e for e in need if e.startswith("DOC-")]
            crit = 4 if not docs or any(e in cited or fact_stated(e, rationale) for e in docs) else 2
        ev = round(4 * (sum(e in cited for e in need) / len(need))) if need else (4 if cited else 0)
        q_share = _share(figures, rationale)
        s_share = _share(words, rationale)
        all_share = _share(facts, rationale)
        quant = round(4 * (q_share if q_share is not None else (s_share or 0.0)))
        if packet.get("asks_amount") and d["decision"] == "flag" and ref.get("amount_asked", True):
            got = d.get("amount")
            accepted = ref.get("accepted_amounts") or [ref.get("misstatement") or 0]
            if not (got is not None and any(t and abs(abs(got) - abs(t)) <= 0.01 * abs(t) for t in accepted)):
                quant = min(quant, 2)
        scep = round(4 * (s_share if s_share is not None else (q_share or 0.0)))
        clar = 4 if all_share is not None and all_share >= 1 else (2 if (all_share or 0) >= 0.5 else 0)
        focus = _focus(rationale, facts, d["entry_id"])
        vals = dict(zip(items, (crit, ev, scep, quant, clar)))
        if focus < 1:
            vals = {k: int(v * focus) if k != "evidence_specific" else v for k, v in vals.items()}
        scored.append(DispositionScore(entry_id=d["entry_id"], scores=vals,
                                       comment="" if focus >= 1 else f"unfocused rationale (focus {focus:.2f})"))
        total += sum(vals.values()) / (4 * len(items))
    planted = packet.get("planted_entries")
    score = total / planted if planted else (1.0 if not scored else 0.0)
    return Judgment(judge="reference", rubric=rubric_id, judge_version=REFERENCE_JUDGE_VERSION, dispositions=scored,
                    rationale_score=score, overall_comment=f"{len(scored)} final dispositions judged mechanically")


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
