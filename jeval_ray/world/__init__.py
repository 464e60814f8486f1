"""World generation: ``generate_world(task_id, seed, knobs)`` is a pure, deterministic function."""

from jeval_ray.world._base import WorldBuilder
from jeval_ray.world._cache import WorldCache
from jeval_ray.world._memory import release_memory, world_memory
from jeval_ray.world._model import DecoyRecord, DefectRecord, Document, World
from jeval_ray.world._rng import rng_for, stable_int
from jeval_ray.world._version import WORLD_VERSION, world_version


def generate_world(task_id: str, seed: int, knobs: dict | None = None) -> World:
    """Generate the world of ``(task_id, seed, knobs)``; raises ``ConfigError`` on bad input."""
    from jeval_ray.tasks import get_task, resolve_knobs, task_module

    spec = get_task(task_id, require_available=True)
    resolved = resolve_knobs(spec.id, knobs)
    with world_memory():
        builder = WorldBuilder(spec, seed, resolved)
        task_module(task_id).plant(builder)
        return builder.build()


__all__ = ["generate_world", "World", "WorldBuilder", "WorldCache", "Document", "DefectRecord", "DecoyRecord", "rng_for",
           "stable_int", "release_memory", "world_memory", "WORLD_VERSION", "world_version"]
