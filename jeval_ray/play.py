"""``python -m jeval_ray.play``: play one episode with a built-in agent and show it step by step.

Example: ``python -m jeval_ray.play --task JE-6 --seed 3 --agent careful``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from jeval_ray.agents import BUILTIN_AGENTS, make_agent
from jeval_ray.contract import make_contract
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.errors import ConfigError
from jeval_ray.records import EpisodeKeys, episode_id, episode_row
from jeval_ray.scoring import aggregate_judgments
from jeval_ray.tasks import parse_knob_args


def _short(text: str, n: int = 110) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m jeval_ray.play",
        description="Play one journal-entry testing episode with a built-in agent and print the brief, "
                    "each step and the score breakdown.")
    ap.add_argument("--task", required=True, help="task id, e.g. JE-6 (see python -m jeval_ray.tasks)")
    ap.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    ap.add_argument("--agent", default="careful", help=f"built-in agent: {', '.join(BUILTIN_AGENTS)} (default careful)")
    ap.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE",
                    help="override a difficulty knob, repeatable (e.g. --knob n_entries=500 --knob prompt_injection=true)")
    ap.add_argument("--withhold", action="append", default=[], metavar="TOOL",
                    help="withhold one of the task's tools (a harder condition), repeatable")
    ap.add_argument("--step-budget", type=int, default=None, help="override the task's step budget")
    ap.add_argument("--json", action="store_true", help="print the episode record (JSON) instead of the step view")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        knobs = parse_knob_args(args.knob)
        env = JEEnv(args.task, knobs, args.withhold, step_budget=args.step_budget)
        agent = make_agent(args.agent, args.seed)
        contract = make_contract(env.spec.id, args.seed, knobs=knobs, tools_withheld=args.withhold,
                                 step_budget=args.step_budget, models=[args.agent], n_seeds=1)
        outcome = asyncio.run(play_episode(env, agent, args.seed))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    condition = "full" if not args.withhold else "withheld:" + "+".join(sorted(args.withhold))
    if args.json:
        keys = EpisodeKeys("play", episode_id(env.spec.id, args.agent, args.seed, condition, contract.digest()), 1,
                           env.spec.id, args.agent, args.seed, condition)
        row = episode_row(keys, outcome, agent=args.agent, tier=env.spec.tier, run_config_json=contract.to_json(),
                          judge_agg=aggregate_judgments(outcome.score.judgments), final_score=outcome.score.score)
        row["run_config"] = json.loads(row["run_config"])
        row["steps"] = [{"step_idx": s.step_idx, "tool": s.tool, "args": s.args, "is_error": s.is_error,
                         "observation": s.observation} for s in outcome.steps]
        row["dispositions"] = [{k: v for k, v in d.items() if k != "reference"} for d in outcome.dispositions]
        print(json.dumps(row, indent=2, default=str))
        return 0
    print("=" * 100)
    print(outcome.brief)
    print("=" * 100)
    for s in outcome.steps:
        mark = "ERR" if s.is_error else "   "
        print(f"{s.step_idx:>3} {mark} {s.tool or '(no tool)'}({_short(s.args, 70)})")
        print(f"        -> {_short(s.observation)}")
    sc, v = outcome.score, outcome.score.verification
    w = env.spec.weights
    print("-" * 100)
    print(f"termination: {outcome.termination}   steps: {len(outcome.steps)}/{env.step_budget}   world_hash: {outcome.world_hash[:16]}…")
    print(f"outcome   {sc.outcome:.3f}  (TP {v.tp}  FP {v.fp}  FN {v.fn}  precision {v.precision:.2f}  recall {v.recall:.2f}  "
          f"F2 {v.f2:.2f}  criteria accuracy {v.criteria_accuracy:.2f}  fabrications {v.fabrications})")
    print(f"process   {sc.process:.3f}  (evidence coverage {v.evidence_coverage:.2f}  evidence precision {v.evidence_precision:.2f}  "
          f"redundant calls {v.redundant_calls}  premature {v.premature_disposition}  first flag at step {v.steps_to_first_flag}  "
          f"baseline before claim {v.baseline_before_claim})")
    print(f"rationale {sc.rationale:.3f}  (reference judge, global_rubric_v1)")
    print(f"score     {sc.score:.3f}  = {w.outcome:.2f}·outcome + {w.process:.2f}·process + {w.rationale:.2f}·rationale")
    return 0


if __name__ == "__main__":
    sys.exit(main())
