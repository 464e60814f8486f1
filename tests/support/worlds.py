"""One process-wide cache of generated worlds, so test modules share them: the task contract
(``test_task_contract.py``), the per-task tests and the key audits read the same ``(task, seed,
knobs)`` worlds, and each is generated once per test process. Worlds are immutable (a frozen
dataclass over Arrow tables), so sharing them is safe; the cache keeps the most recently used
``MAX_WORLDS`` (a world is well under 1 MB)."""

from __future__ import annotations

import json
from collections import OrderedDict

from jeval_ray.world import World, generate_world

MAX_WORLDS = 160
_CACHE: OrderedDict[tuple, World] = OrderedDict()


def world(task_id: str, seed: int, knobs: dict | None = None, *, keep: bool = True) -> World:
    """The world of ``(task_id, seed, knobs)``, generated on first use. ``keep=False``: do not add a
    newly generated world to the cache (for sweeps over many seeds that nothing reads twice)."""
    key = (task_id, int(seed), json.dumps(knobs or {}, sort_keys=True))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    w = generate_world(task_id, seed, knobs)
    if keep:
        _CACHE[key] = w
        while len(_CACHE) > MAX_WORLDS:
            _CACHE.popitem(last=False)
    return w
