"""``generate_world``: the task's ``plant`` run on a ``WorldBuilder`` (this layer sits above the tasks,
and above the tools: the prompt-injection condition plays the naive rule to find its look-alikes)."""

from __future__ import annotations

from jeval_ray.builder import World, WorldBuilder, world_memory
from jeval_ray.tasks import get_task, resolve_knobs, task_value
from jeval_ray.world._lookalikes import lookalikes


def generate_world(task_id: str, seed: int, knobs: dict | None = None) -> World:
    """Generate the world of ``(task_id, seed, knobs)``; raises ``ConfigError`` on bad input.

    With ``prompt_injection`` the world without it is generated first: the naive rule's unplanted
    catches there (``jeval_ray.world._lookalikes``) are the look-alikes that share the injected notes
    with the defects and decoys. A world without injection is generated exactly as before."""
    spec = get_task(task_id, require_available=True)
    resolved = resolve_knobs(spec.id, knobs)
    with world_memory():
        targets: tuple[tuple[str, str, str], ...] = ()
        if resolved.prompt_injection:
            plain = _build(task_id, spec, seed, resolved.model_copy(update={"prompt_injection": False}))
            targets = lookalikes(plain)
            del plain
        return _build(task_id, spec, seed, resolved, targets)


def _build(task_id: str, spec, seed: int, resolved,
           injection_lookalikes: tuple[tuple[str, str, str], ...] = ()) -> World:
    builder = WorldBuilder(spec, seed, resolved)
    task_value(task_id).plant(builder)
    if injection_lookalikes:
        builder.injection_lookalikes = injection_lookalikes
    return builder.build()
