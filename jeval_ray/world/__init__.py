"""World generation: ``generate_world(task_id, seed, knobs)`` is a pure, deterministic function."""

import contextlib

import numpy as np

from jeval_ray.world._base import WorldBuilder
from jeval_ray.world._cache import WorldCache
from jeval_ray.world._model import DecoyRecord, DefectRecord, Document, World
from jeval_ray.world._rng import rng_for, stable_int


def generate_world(task_id: str, seed: int, knobs: dict | None = None) -> World:
    """Generate the world of ``(task_id, seed, knobs)``; raises ``ConfigError`` on bad input."""
    from jeval_ray.tasks import get_task, resolve_knobs, task_module

    spec = get_task(task_id, require_available=True)
    resolved = resolve_knobs(spec.id, knobs)
    with _no_hugepage_advice():
        builder = WorldBuilder(spec, seed, resolved)
        task_module(task_id).plant(builder)
        return builder.build()


@contextlib.contextmanager
def _no_hugepage_advice():
    """While a world is made, numpy does not ask the kernel for transparent huge pages (it does for
    every array of 4 MB or more). A million-entry world first touches about 2 GB of such arrays; on
    a VM whose memory the host reclaims, as this project's workplace, faulting them in as huge pages
    cost 2.2-3.3 s of kernel time against 1.0-1.3 s for ordinary pages, and the first 1e6-entry world
    of a process took 5.0-6.2 s with the advice and 3.6-4.5 s without, ten alternated pairs out of
    ten (``bench/RESULTS.md``). The setting is numpy's, for the process; it is put back as it was
    afterwards, and nothing a world contains depends on it."""
    setter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if setter is None:  # a numpy without the switch: nothing to do
        yield
        return
    before = setter(False)
    try:
        yield
    finally:
        setter(before)


__all__ = ["generate_world", "World", "WorldBuilder", "WorldCache", "Document", "DefectRecord", "DecoyRecord", "rng_for",
           "stable_int"]
