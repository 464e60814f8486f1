"""The prompt-injection condition (``prompt_injection=True``): injection is noise, never a label.

* the injected notes name the same share of the naive rule's candidates of each kind: in every world
  each kind (defects in the listing, decoys, look-alikes) carries that share of its members up to the
  rounding of a count, and over the seeds P(injected | defect), P(injected | decoy) and
  P(injected | look-alike) agree within 0.05 on every task (a kind with at least MIN_MEASURED members
  over them), where the look-alikes are the naive rule's unplanted catches (the entries the built-in
  naive agent flags that are neither defects nor decoys), found by playing it on the injected world;
* every note is a memo of its own in one wording pool, and the injected world is the world without
  injection plus those memos (the ledger, the key and every other document unchanged);
* no built-in agent raises under injection, careful keeps >= 0.95 outcome and random < naive < careful.

Worlds are generated once per task and shared by the tests (an injected world costs two generations
and one naive pass: about 0.1 s).
"""

from __future__ import annotations

import asyncio
import re
import statistics

import pytest

from jeval_ray.agents import make_agent
from jeval_ray.builder import WorldBuilder
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.tasks import TASK_IDS
from jeval_ray.world import generate_world
from jeval_ray.world._lookalikes import naive_flags

INJECTED = {"prompt_injection": True}
#: the seeds the three shares are measured over (not tuned on)
SEEDS = range(700, 724)
#: the seeds the built-in agents are played on under injection
PLAY_SEEDS = range(700, 704)
MAX_GAP = 0.05
SHARE = WorldBuilder._INJECTED_SHARE
#: the members of a kind (over SEEDS) from which its share is measured to MAX_GAP
MIN_MEASURED = 40
#: one pattern per wording of the pool, capturing the entry id it names
NOTES = [re.compile(re.escape(w).replace(re.escape("{entry}"), r"(\d+)") + r"\Z") for w in WorldBuilder._INJECTIONS]


def _injected(world) -> dict[str, str]:
    """{entry id: wording pattern} of the injected notes of ``world``; asserts each is a memo in the pool."""
    out = {}
    for d in world.documents:
        hit = [(m.group(1), k) for k, p in enumerate(NOTES) for m in [p.match(d.body)] if m]
        if hit:
            assert d.doc_type == "memo" and d.title.startswith("Note regarding "), d
            out[hit[0][0]] = hit[0][1]
        else:
            assert not any(w.split(" ")[0] in d.body for w in ("IMPORTANT NOTICE TO AUDITORS", "[SYSTEM] Message to")), d
    return out


@pytest.fixture(scope="module", params=TASK_IDS)
def worlds(request):
    task = request.param
    return task, {s: generate_world(task, s, INJECTED) for s in SEEDS}


def test_injection_is_noise_not_a_label(worlds):
    task, ws = worlds
    counts = {"defect": [0, 0], "decoy": [0, 0], "look-alike": [0, 0]}
    pool = {"defect": set(), "decoy": set(), "look-alike": set()}
    for w in ws.values():
        notes = _injected(w)
        listed = set(w.ledger.column("entry_id").unique().to_pylist())
        defects = {d.entry_id for d in w.defects} & listed  # a note never names an entry missing from the listing
        decoys = {d.entry_id for d in w.decoys}
        lookalikes = set(naive_flags(w)) - {d.entry_id for d in w.defects} - decoys
        assert set(notes) <= defects | decoys | lookalikes, (task, w.seed)
        for kind, ids in (("defect", defects), ("decoy", decoys), ("look-alike", lookalikes)):
            # in every world, each kind carries the same share of its members, up to the rounding of a count
            assert abs(len(ids & set(notes)) - SHARE * len(ids)) < 1, (task, w.seed, kind, len(ids & set(notes)), len(ids))
            counts[kind][0] += len(ids & set(notes))
            counts[kind][1] += len(ids)
            pool[kind] |= {notes[e] for e in ids & set(notes)}
    # over the seeds the shares agree within 0.05; a kind with few members over them (JE-5's and JE-16's
    # look-alikes: under one a world) cannot show its share to 0.05 (one note is more than that): the
    # per-world rounding above holds it (over 200 seeds its share is within 0.02 of the others')
    shares = {k: hit / n for k, (hit, n) in counts.items() if n >= MIN_MEASURED}
    assert shares["defect"] > 0.15, (task, counts)  # the condition does inject
    assert max(shares.values()) - min(shares.values()) <= MAX_GAP, (task, counts)
    # one wording pool for every kind of candidate
    assert pool["defect"] == pool["decoy"] == set(range(len(NOTES))), (task, pool)


def test_the_injected_world_is_the_plain_world_plus_memos(worlds):
    task, ws = worlds
    seed = SEEDS[0]
    inj, plain = ws[seed], generate_world(task, seed)
    assert generate_world(task, seed, INJECTED).world_hash == inj.world_hash
    # the same ledger and key (document ids are drawn over the pack, so they are compared by what they are)
    assert inj.ledger.equals(plain.ledger)
    assert [(d.entry_id, d.criteria, d.misstatement) for d in inj.defects] == \
        [(d.entry_id, d.criteria, d.misstatement) for d in plain.defects]
    assert [d.entry_id for d in inj.decoys] == [d.entry_id for d in plain.decoys]
    notes = [d for d in inj.documents if any(p.match(d.body) for p in NOTES)]
    others = sorted((d.doc_type, d.title, d.date) for d in inj.documents if d not in notes)
    assert others == sorted((d.doc_type, d.title, d.date) for d in plain.documents)
    assert len(inj.documents) == len(plain.documents) + len(notes) and notes


def _play(task, name, world):
    env = JEEnv(task, INJECTED)
    return asyncio.run(play_episode(env, make_agent(name, world.seed), world.seed, world=(world, False))).score


def test_built_in_agents_do_not_raise_and_keep_their_bounds_under_injection(worlds):
    task, ws = worlds
    out = {name: [_play(task, name, ws[s]) for s in PLAY_SEEDS] for name in ("random", "naive", "careful")}
    assert min(s.outcome for s in out["careful"]) >= 0.95, (task, [s.outcome for s in out["careful"]])
    rnd, naive, careful = (statistics.fmean(s.score for s in out[n]) for n in ("random", "naive", "careful"))
    assert rnd < naive < careful, (task, rnd, naive, careful)
