"""World building: the tools a task's ``plant`` uses to turn the simulated year into its world.

``WorldBuilder`` holds the year's books (``jeval_ray.books``) and the planting helpers; ``World``
is what it builds; ``spec`` is the task catalogue's data model (``TaskSpec``, ``Knobs``). This
layer sits below the tasks: it knows no task. ``jeval_ray.world.generate_world`` (above the tasks)
picks a task's ``plant`` and runs it on a builder.
"""

from jeval_ray.builder._base import ClaimOverlap, Entries, WorldBuilder
from jeval_ray.builder._hash import world_hash
from jeval_ray.builder._memory import release_memory, world_memory
from jeval_ray.builder._model import DecoyRecord, DefectRecord, Document, World
from jeval_ray.builder._rng import rng_for, stable_int

__all__ = ["ClaimOverlap", "DecoyRecord", "DefectRecord", "Document", "Entries", "World", "WorldBuilder",
           "release_memory", "rng_for", "stable_int", "world_hash", "world_memory"]
