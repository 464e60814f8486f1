"""The versioned judge rubric, loaded from the package's data file."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources


@cache
def load_rubric(rubric_id: str = "global_rubric_v1") -> dict:
    """The rubric document ``rubric_id`` (a JSON file under ``jeval_ray/scoring/rubrics``)."""
    path = resources.files("jeval_ray.scoring").joinpath("rubrics", f"{rubric_id}.json")
    if not path.is_file():
        raise KeyError(f"unknown rubric {rubric_id!r}")
    return json.loads(path.read_text(encoding="utf-8"))


def rubric_items(rubric_id: str = "global_rubric_v1") -> list[str]:
    return [i["id"] for i in load_rubric(rubric_id)["items"]]
