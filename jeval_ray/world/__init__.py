"""World generation: ``generate_world(task_id, seed, knobs)`` is a pure, deterministic function.

It runs a task's ``plant`` (``jeval_ray.tasks``) on a ``WorldBuilder`` (``jeval_ray.builder``, the
layer below the tasks); the builder's names are re-exported here, where users have always found them.
"""

from jeval_ray.builder import (DecoyRecord, DefectRecord, Document, World, WorldBuilder, release_memory, rng_for,
                               stable_int, world_memory)
from jeval_ray.world._balance import out_of_balance
from jeval_ray.world._cache import WorldCache
from jeval_ray.world._generate import generate_world
from jeval_ray.world._version import WORLD_VERSION, world_version

__all__ = ["generate_world", "World", "WorldBuilder", "WorldCache", "Document", "DefectRecord", "DecoyRecord", "rng_for",
           "stable_int", "release_memory", "world_memory", "WORLD_VERSION", "world_version",
           "out_of_balance"]
