"""``WorldCache``: a small LRU of generated worlds, keyed by ``(task_id, seed, knobs)``.

A ``World`` is immutable (frozen, with Arrow tables) and everything an episode changes lives in its
``EpisodeState``, so one world can serve every episode of the same ``(task_id, seed, knobs)``: the
models and conditions of one grid cell-group (a withheld tool does not change the world). The sweep
lists those cells one after another, so a worker keeping a few worlds generates each about once.

The cache is bounded by count and by entries: a world at default knobs holds about 0.2 MB, one of a
million entries about 0.45 GB, so sixteen of those would be 7 GB in one worker. ``max_entries``
bounds the entries of the worlds kept in all; the last world is always kept, however big.
"""

from __future__ import annotations

import json
from collections import OrderedDict

from jeval_ray.builder import World
from jeval_ray.world._generate import generate_world


class WorldCache:
    """Least-recently-used worlds, at most ``capacity`` of them and ``max_entries`` entries in all
    (the last world is always kept); ``capacity`` 0 keeps none (every call generates)."""

    def __init__(self, capacity: int = 16, max_entries: int = 1_000_000):
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self.capacity = int(capacity)
        self.max_entries = int(max_entries)
        self.hits = 0
        self.misses = 0
        self._worlds: OrderedDict[tuple, World] = OrderedDict()
        self._entries = 0

    @property
    def entries(self) -> int:
        """Entries of the worlds kept."""
        return self._entries

    def __len__(self) -> int:
        return len(self._worlds)

    def get(self, task_id: str, seed: int, knobs: dict) -> World:
        """The world of ``(task_id, seed, knobs)`` (resolved knobs, as ``JEEnv.knobs.model_dump()``)."""
        return self.fetch(task_id, seed, knobs)[0]

    def fetch(self, task_id: str, seed: int, knobs: dict) -> tuple[World, bool]:
        """``get``, and whether the world was kept here already (generated for an earlier episode)."""
        key = (task_id, int(seed), json.dumps(knobs, sort_keys=True, default=str))
        world = self._worlds.get(key)
        if world is not None:
            self.hits += 1
            self._worlds.move_to_end(key)
            return world, True
        self.misses += 1
        world = generate_world(task_id, int(seed), knobs)
        if self.capacity:
            self._worlds[key] = world
            self._entries += world.n_entries
            while len(self._worlds) > 1 and (len(self._worlds) > self.capacity or self._entries > self.max_entries):
                _, old = self._worlds.popitem(last=False)
                self._entries -= old.n_entries
        return world, False


__all__ = ["WorldCache"]
