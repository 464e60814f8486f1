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
    "JE-1": 10,
    "JE-2": 8,
    "JE-3": 9,
    "JE-4": 7,
    "JE-5": 10,
    "JE-6": 8,
    "JE-7": 9,
    "JE-8": 9,
    "JE-9": 11,
    "JE-10": 9,
    "JE-11": 9,
    "JE-12": 8,
    "JE-13": 10,
    "JE-14": 9,
    "JE-15": 10,
    "JE-16": 10,
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
