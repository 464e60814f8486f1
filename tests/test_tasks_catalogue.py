"""The task catalogue and its CLI."""

import json
import subprocess
import sys

import pytest

from jeval_ray.tools._tools import TOOLS
from jeval_ray.errors import TaskNotAvailableError
from jeval_ray.tasks import ALL_TOOLS, TASK_IDS, all_tasks, get_task


def test_catalogue_lists_all_sixteen_tasks_with_tiers_budgets_and_weights():
    tasks = all_tasks()
    assert [t.id for t in tasks] == [f"JE-{i}" for i in range(1, 17)]
    budgets = {"L1": 40, "L2": 60, "L3": 80, "L4": 120}
    weights = {"L1": (0.7, 0.2, 0.1), "L2": (0.6, 0.25, 0.15), "L3": (0.5, 0.25, 0.25), "L4": (0.4, 0.3, 0.3)}
    for t in tasks:
        assert t.tier == ("L1", "L2", "L3", "L4")[(int(t.id[3:]) - 1) // 4]
        assert t.step_budget >= budgets[t.tier]  # the tier's budget is the floor; a task's own may be higher
        assert (t.weights.outcome, t.weights.process, t.weights.rationale) == weights[t.tier]
        assert t.judges_per_episode == (3 if t.tier == "L4" else 1)
        assert t.sources and t.sources[0] == "general_ledger"
        assert set(t.tools) <= set(ALL_TOOLS)
        assert {"flag_entry", "clear_entry", "submit"} <= set(t.tools)
        assert set(t.withheld_variant) <= set(t.tools)


def test_every_catalogued_tool_has_an_implementation_with_a_schema():
    assert set(ALL_TOOLS) == set(TOOLS)
    for name, tool in TOOLS.items():
        s = tool.schema()
        assert s["type"] == "function" and s["function"]["name"] == name
        assert s["function"]["parameters"]["type"] == "object"


def test_task_ids_are_normalised():
    assert get_task("je3").id == "JE-3" and get_task("JE-03").id == "JE-3"


def test_playing_an_unavailable_task_says_so(monkeypatch):
    import dataclasses

    from jeval_ray import tasks

    task = tasks.task_value("JE-16")  # the registry's value, as if the task were catalogued but not yet available
    monkeypatch.setitem(tasks._TASKS, "JE-16", dataclasses.replace(task, spec=task.spec.model_copy(update={"available": False})))
    with pytest.raises(TaskNotAvailableError, match="JE-16 .* not yet available"):
        get_task("JE-16", require_available=True)
    assert get_task("JE-16").id == "JE-16"


def test_tasks_cli_prints_the_catalogue_and_json():
    out = subprocess.run([sys.executable, "-m", "jeval_ray.tasks"], capture_output=True, text=True, check=True).stdout
    for tid in TASK_IDS:
        assert tid in out
    data = json.loads(subprocess.run([sys.executable, "-m", "jeval_ray.tasks", "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    assert [d["id"] for d in data] == list(TASK_IDS)
    assert {"tier", "objective", "sources", "tools", "step_budget", "weights", "judges_per_episode", "default_knobs",
            "available"} <= set(data[0])


def test_catalogue_document_is_up_to_date():
    from pathlib import Path

    from jeval_ray.catalogue import catalogue_markdown

    doc = Path(__file__).resolve().parents[1] / "docs" / "tasks.md"
    assert doc.read_text() == catalogue_markdown(), "regenerate: python -m jeval_ray.tasks --markdown > docs/tasks.md"


@pytest.mark.parametrize("task_id, tier, budget, criteria", [
    ("JE-2", "L1", 60, "SELF_APPROVAL"),
    ("JE-3", "L1", 70, "INVALID_ACCOUNT"),
    ("JE-4", "L1", 40, "UNAUTHORISED_USER"),
    ("JE-5", "L2", 100, "LIMIT_AVOIDANCE"),
    ("JE-6", "L2", 70, "OFF_HOURS"),
    ("JE-15", "L4", 120, "SHELL_VENDOR"),
])
def test_spec_is_available_with_its_budget_and_criteria(task_id, tier, budget, criteria):
    spec = get_task(task_id)
    assert spec.available and spec.tier == tier and spec.step_budget == budget
    assert spec.criteria_codes == (criteria,)
