"""Names the sweep's config and its grid share (the grid reads a config; a config's checks build its grid)."""

from __future__ import annotations

from jeval_ray.errors import ConfigError
from jeval_ray.tasks import get_task

#: the built-in conditions: every tool, and the task's withheld-tool variant
FULL = "full"
WITHHELD = "withheld"


def _task_overrides(task_knobs: dict, task_id: str) -> dict:
    for k, v in task_knobs.items():
        try:
            if get_task(k).id == task_id:
                return v
        except ConfigError:
            continue
    return {}
