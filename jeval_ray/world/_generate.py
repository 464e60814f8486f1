"""``generate_world``: the task's ``plant`` run on a ``WorldBuilder`` (this layer sits above the tasks)."""

from __future__ import annotations

from jeval_ray.builder import World, WorldBuilder, world_memory
from jeval_ray.tasks import get_task, resolve_knobs, task_value


def generate_world(task_id: str, seed: int, knobs: dict | None = None) -> World:
    """Generate the world of ``(task_id, seed, knobs)``; raises ``ConfigError`` on bad input."""
    spec = get_task(task_id, require_available=True)
    resolved = resolve_knobs(spec.id, knobs)
    with world_memory():
        builder = WorldBuilder(spec, seed, resolved)
        task_value(task_id).plant(builder)
        return builder.build()
