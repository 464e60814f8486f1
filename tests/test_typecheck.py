"""The task modules and the world layer type-check (mypy, configured in pyproject's ``[tool.mypy]``:
the paths, and the task modules not yet on the task kit, excluded with their reason).

Typed column access (``WorldBuilder.cols``), typed forms and the ``Task`` value make a misspelt
column or a wrong field a type error here instead of a ``KeyError`` in a world."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_tasks_and_world_type_check():
    run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
