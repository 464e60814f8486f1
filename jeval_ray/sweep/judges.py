"""Judge functions of the judge pool: a judge is a function of the judge packet.

``JUDGES`` maps a name to ``fn(packet, *, rubric, idx, seed) -> Judgment`` (plain or ``async``).
The reference judge is registered here; an LLM judge plugs in by adding an entry (or by naming a
``"package.module:function"`` in ``scoring.judges``, which every worker process can import).
A judge that raises becomes a ``failed`` judgment with its error: never silently scored.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from jeval_ray.scoring import Judgment, reference_judge


def _reference(packet: dict, *, rubric: str, idx: int, seed: int) -> Judgment:
    return reference_judge(packet, rubric)


JUDGES: dict[str, Callable[..., Any]] = {"reference": _reference}


def register_judge(name: str, fn: Callable[..., Any]) -> None:
    """Register a judge in this process (worker processes import ``module:function`` names instead)."""
    JUDGES[name] = fn


def resolve_judge(name: str) -> Callable[..., Any]:
    if name in JUDGES:
        return JUDGES[name]
    if ":" in name:
        mod, _, attr = name.partition(":")
        return getattr(importlib.import_module(mod), attr)
    raise KeyError(f"unknown judge {name!r}")


def is_known_judge(name: str) -> bool:
    try:
        resolve_judge(name)
    except (KeyError, ImportError, AttributeError):
        return False
    return True


async def run_judge(name: str, packet: dict, *, rubric: str, idx: int, seed: int) -> Judgment:
    """Run one judge; any exception becomes a failed ``Judgment``."""
    try:
        out = resolve_judge(name)(packet, rubric=rubric, idx=idx, seed=seed)
        if inspect.isawaitable(out):
            out = await out
        return out if isinstance(out, Judgment) else Judgment.model_validate(out)
    except Exception as exc:  # noqa: BLE001 - a judge failure is data, not a crash
        return Judgment(judge=name, rubric=rubric, status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])


__all__ = ["JUDGES", "is_known_judge", "register_judge", "resolve_judge", "run_judge"]
