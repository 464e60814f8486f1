"""``WORLD_VERSION``: the version of each task's worlds, bumped by hand when they change on purpose.

A world is a pure function of ``(task_id, seed, knobs, WORLD_VERSION[task_id])``. A change to what a
task generates (the ledger, master data or documents of a world, the brief, the tool schemas, or the
key's facts: defect and decoy records, their criteria, amounts and required evidence) must come with
a bump of that task's entry here and a re-pinned golden in the same commit
(``python -m jeval_ray.golden --repin``; docs/tasks.md, "World versions"). Episode rows and the run
manifest record the version; a resume and the report refuse to mix versions of a task.

This module imports nothing of the package but ``jeval_ray.errors``.
"""

from __future__ import annotations

from jeval_ray.errors import UnknownTaskError

#: task id -> version of its worlds (a positive int; only ever goes up)
WORLD_VERSION: dict[str, int] = {
    "JE-1": 8,
    "JE-2": 6,
    "JE-3": 7,
    "JE-4": 5,
    "JE-5": 7,
    "JE-6": 6,
    "JE-7": 7,
    "JE-8": 7,
    "JE-9": 9,
    "JE-10": 7,
    "JE-11": 7,
    "JE-12": 6,
    "JE-13": 7,
    "JE-14": 7,
    "JE-15": 8,
    "JE-16": 8,
}


def world_version(task_id: str) -> int:
    """The world version of ``task_id`` (a catalogue id such as ``JE-3``)."""
    try:
        return WORLD_VERSION[task_id]
    except KeyError:
        raise UnknownTaskError(f"no world version for task id {task_id!r}; versioned tasks are "
                               f"{', '.join(WORLD_VERSION)}") from None


def world_versions(task_ids) -> dict[str, int]:
    """``{task_id: version}`` for the given task ids, in their order."""
    return {t: world_version(t) for t in task_ids}


__all__ = ["WORLD_VERSION", "world_version", "world_versions"]
