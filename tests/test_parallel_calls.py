"""Several tool calls in one reply (the kit's ``Batch``): dispositions wait for the next call, independent
reads go out together, and neither changes which calls are made, the dispositions' order, or where the
budget stops."""

from __future__ import annotations

import json

import pytest

from jeval_ray.agents import make_agent
from jeval_ray.agents._script import ScriptedAgent
from jeval_ray.episode import play
from jeval_ray.protocol import Action
from jeval_ray.protocol.kit import MAX_CALLS_PER_REPLY, Batch, Kit
from jeval_ray.tasks import TASK_IDS, task_value
from jeval_ray.tasks.taskkit import clear, flag, review
from jeval_ray.builder import rng_for


class CountingAgent(ScriptedAgent):
    """The careful agent, counting its replies and the calls in each."""

    def __init__(self, seed: int, *, parallel: bool):
        def strategy_for(task_id: str):
            def strategy(kit: Kit):
                kit.parallel = parallel
                return (yield from task_value(task_id).careful(kit))
            return strategy

        super().__init__("careful", strategy_for, seed, max_observation_chars=20_000)
        self.replies: list[int] = []

    def act_sync(self, observations):
        turn = super().act_sync(observations)
        self.replies.append(len(turn.actions))
        return turn


@pytest.mark.parametrize("task", TASK_IDS)
def test_one_reply_or_many_the_calls_and_the_score_are_the_same(task):
    seed = 3
    serial, parallel = CountingAgent(seed, parallel=False), CountingAgent(seed, parallel=True)
    one, many = play(task, serial, seed), play(task, parallel, seed)
    # the same calls (reads may go out in another order: in one reply, pages are followed after it) ...
    assert sorted((s.tool, s.args) for s in one.steps) == sorted((s.tool, s.args) for s in many.steps)
    # ... and the same dispositions in the same order
    disposed = lambda out: [(s.tool, s.args) for s in out.steps if s.tool in ("flag_entry", "clear_entry", "submit")]
    assert disposed(one) == disposed(many)
    assert one.score.score == many.score.score and many.score.verification.outcome >= 0.95
    assert set(serial.replies) == {1}
    assert len(parallel.replies) < len(serial.replies), (task, len(parallel.replies))
    assert max(parallel.replies) <= MAX_CALLS_PER_REPLY + 1  # waiting dispositions + the call that sends them


def test_the_built_in_careful_agent_makes_parallel_calls():
    agent = make_agent("careful", 0, max_observation_chars=20_000)
    replies = []
    act = agent.act_sync

    def counting(observations):
        turn = act(observations)
        replies.append(len(turn.actions))
        return turn

    agent.act_sync = counting
    out = play("JE-13", agent, 0)
    assert out.score.verification.outcome == 1.0
    assert max(replies) > 1 and len(replies) < len(out.steps) / 2


def _drive(strategy, budget: int) -> tuple[list[Action], int]:
    """Run ``strategy(kit)`` against an environment that answers every call with a document body and stops
    at ``budget`` calls; the calls made and the replies they took."""
    kit = Kit("brief", [], 0, rng_for("JE-1", 0, "test"), task_id="JE-1", step_budget=budget)
    gen = strategy(kit)
    made: list[Action] = []
    replies = 0
    answer = None
    try:
        step = next(gen)
        while True:
            replies += 1
            actions = list(step.actions) if isinstance(step, Batch) else [step]
            run = actions[: budget - len(made)]
            made += run
            texts = [json.dumps({"body": f"support for {a.args}"}) for a in run]
            answer = texts if isinstance(step, Batch) else texts[0]
            if len(made) >= budget:
                break
            step = gen.send(answer)
    except StopIteration:
        pass
    return made, replies


@pytest.mark.parametrize("budget", [5, 9, 14, 23, 40])
def test_review_with_reads_reaches_the_same_items_within_the_budget(budget):
    items = [f"E{i:02d}" for i in range(15)]
    docs = {e: [f"DOC-{e}"] if int(e[1:]) % 4 else [f"DOC-{e}", f"DOC-{e}b"] for e in items}

    def strategy(prefetch: bool):
        def run(kit: Kit):
            def decide(e: str):
                for d in docs[e]:
                    yield from kit.open(d)
                return flag(e, "X", docs[e], "why") if int(e[1:]) % 3 else clear(e, docs[e], "fine")

            reads = (lambda e: [("open_document", {"doc_id": d}) for d in docs[e]]) if prefetch else None
            done = yield from review(kit, items, decide, reserve=2, reads=reads)
            yield from kit.submit(f"{len(done)} done")
        return run

    one, replies_one = _drive(strategy(False), budget)
    many, replies_many = _drive(strategy(True), budget)
    disposed = lambda calls: [a.args["entry_id"] for a in calls if a.tool in ("flag_entry", "clear_entry")]
    assert disposed(many) == disposed(one)
    assert sorted(a.args.get("doc_id", "") for a in many if a.tool == "open_document") == sorted(
        a.args.get("doc_id", "") for a in one if a.tool == "open_document")
    assert any(a.tool == "submit" for a in one) and any(a.tool == "submit" for a in many)
    assert replies_many < replies_one
