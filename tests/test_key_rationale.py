"""Every kind of planted entry has a written key rationale, and the catalogue shows it."""

from __future__ import annotations

import pytest

from jeval_ray.tasks import available_tasks, task_module
from jeval_ray.world import generate_world

TASKS = [t.id for t in available_tasks()]
SEEDS = range(12)


@pytest.mark.parametrize("task_id", TASKS)
def test_every_defect_and_decoy_type_planted_has_a_key_rationale(task_id):
    rationale = getattr(task_module(task_id), "KEY_RATIONALE", ())
    documented = {(r.kind, r.type) for r in rationale}
    assert len(documented) == len(rationale), f"{task_id}: a type is documented twice"
    planted = set()
    for seed in SEEDS:
        w = generate_world(task_id, seed)
        planted |= {("defect", d.defect_type) for d in w.defects} | {("decoy", d.decoy_type) for d in w.decoys}
    assert planted <= documented, f"{task_id}: no key rationale for {sorted(planted - documented)}"
    assert {k for k, _ in documented} == {"defect", "decoy"}
    for r in rationale:
        assert r.evidence.strip() and r.facts.strip() and r.conclusion.strip(), (task_id, r.type)


def test_the_catalogue_renders_each_tasks_rationale_with_a_worked_example():
    from jeval_ray.catalogue import key_rationale_markdown

    mod = task_module(TASKS[0])
    text = key_rationale_markdown(TASKS[0], mod.KEY_RATIONALE, 7)
    w = generate_world(TASKS[0], 7)
    assert "### Key rationale" in text and "Worked example (seed 7" in text
    assert w.defects[0].entry_id in text and w.decoys[0].entry_id in text
    for r in mod.KEY_RATIONALE:
        assert f"`{r.type}`" in text
