"""No observation ever reveals the held-out defect ledger."""

import itertools
import re

from jeval_ray.episode import play
from jeval_ray.tasks import available_tasks

AVAILABLE = [t.id for t in available_tasks()]
#: words that would give away what was planted
TELLTALES = re.compile(r"decoy|defect|planted|held.out|is_exception|misstatement_cents|red.flag", re.I)


def _episodes(n):
    combos = itertools.cycle(itertools.product(AVAILABLE, ("random", "careful", "naive")))
    for i in range(n):
        task, agent = next(combos)
        yield play(task, agent, seed=100 + i)


def test_no_observation_in_200_episodes_contains_a_defect_ledger_only_value():
    checked = 0
    for o in _episodes(200):
        from jeval_ray.world import generate_world

        w = generate_world(o.task_id, o.seed)
        visible = "\n".join([o.brief] + [d.body + d.title for d in w.documents])
        secret = {d.defect_type for d in w.defects} | {d.decoy_type for d in w.decoys}
        secret = {s for s in secret if s not in visible}
        for s in o.steps:
            text = s.observation
            assert not TELLTALES.search(text), (o.task_id, s.tool, text[:300])
            for value in secret:
                assert value not in text, (o.task_id, value)
            checked += 1
    assert checked > 1000
