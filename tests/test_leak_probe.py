"""No surface leaks: from the listing alone, a classifier cannot tell a task's decoys from its defects.

For every task, a logistic regression and a random forest (``jeval_ray.agents.surface``) are
trained on listing-only features of the labelled worlds of 30 seeds (ledger lines, master data,
document titles: nothing an agent sees only by opening a document) and scored on 30 others. The
held-out decoy-vs-defect ROC AUC must stay ≤ 0.65 for both: what separates a decoy from a defect
is evidence an auditor has to read. Briefs state no count or range that gives a planted entry away.
"""

import re

import pytest

from jeval_ray.agents.surface import probe_auc
from jeval_ray.env import JEEnv
from jeval_ray.tasks import TASK_IDS
from jeval_ray.world import generate_world

MAX_AUC = 0.65


@pytest.mark.parametrize("task", TASK_IDS)
def test_a_listing_only_classifier_cannot_tell_decoys_from_defects(task):
    train = [generate_world(task, s) for s in range(3000, 3030)]
    test = [generate_world(task, s) for s in range(4000, 4030)]
    auc = probe_auc(train, test)
    assert all(v is not None and v <= MAX_AUC for v in auc.values()), (task, auc)


@pytest.mark.parametrize("task", TASK_IDS)
def test_the_brief_states_no_entry_count_or_id(task):
    env = JEEnv(task)
    brief, _ = env.reset(seed=7)
    w = env.world
    numbers = set(re.findall(r"\d+", brief))
    assert str(w.n_entries) not in numbers and str(w.n_entries + len(w.hidden_entries)) not in numbers
    assert not any(e in brief for e in w.entry_ids), task
