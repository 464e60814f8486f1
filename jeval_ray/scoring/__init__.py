"""Scoring: verifier -> judge -> combine with the task's weights (``docs/scoring.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jeval_ray.scoring.judge import Judgment, aggregate_judgments, build_judge_packet, reference_judge
from jeval_ray.scoring.rubric import load_rubric, rubric_items
from jeval_ray.scoring.verifier import Verification, final_dispositions, is_void, verify


@dataclass
class EpisodeScore:
    outcome: float
    process: float
    rationale: float
    score: float
    verification: Verification
    judgments: list[Judgment] = field(default_factory=list)

    def metrics(self) -> dict:
        return {**self.verification.as_dict(), "rationale": self.rationale, "score": self.score}


def combine(weights, outcome: float, process: float, rationale: float) -> float:
    """score = w_o·outcome + outcome·(w_p·process + w_r·rationale).

    Process and rationale are worth what the conclusions they support are worth: an audit whose
    exception list is wrong earns nothing for how it was documented (``docs/scoring.md``).
    """
    return weights.outcome * outcome + outcome * (weights.process * process + weights.rationale * rationale)


def score_episode(spec, world, state, steps, judgments: list[Judgment] | None = None, brief: str = "") -> EpisodeScore:
    """Verify the trajectory and combine it with the judges (the reference judge by default)."""
    v = verify(spec, world, state, steps)
    if judgments is None:
        judgments = [reference_judge(build_judge_packet(spec, world, state, brief))]
    agg = aggregate_judgments(judgments)
    rationale = agg["rationale"] if agg["rationale"] is not None else 0.0
    return EpisodeScore(v.outcome, v.process, rationale, combine(spec.weights, v.outcome, v.process, rationale), v, judgments)


__all__ = ["EpisodeScore", "Judgment", "Verification", "aggregate_judgments", "build_judge_packet", "combine",
           "final_dispositions", "is_void", "load_rubric", "reference_judge", "rubric_items", "score_episode", "verify"]
