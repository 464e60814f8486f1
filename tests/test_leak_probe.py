"""No surface leaks in the brief: it states no count or range that gives a planted entry away.

The listing-only classifier (``jeval_ray.agents.surface``) is tested with the adversaries in
``tests/test_adversarial.py``, which builds the same labelled worlds once for both.
"""

import re

import pytest

from jeval_ray.env import JEEnv
from jeval_ray.tasks import TASK_IDS


@pytest.mark.parametrize("task", TASK_IDS)
def test_the_brief_states_no_entry_count_or_id(task):
    env = JEEnv(task)
    brief, _ = env.reset(seed=7)
    w = env.world
    # whole numbers as written ("6,909,966.25" is one number, not 6, 909, 966 and 25)
    numbers = {n.replace(",", "").split(".")[0] for n in re.findall(r"\d[\d,]*(?:\.\d+)?", brief)}
    assert str(w.n_entries) not in numbers and str(w.n_entries + len(w.hidden_entries)) not in numbers
    assert not any(e in brief for e in w.entry_ids), task
