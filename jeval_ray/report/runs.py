"""What a path given to the report is: a run, a runs root, a file, or nothing at all.

A run directory holds ``manifest.json`` or at least one of the datasets (``episodes/`` ...). The
report refuses anything else with a message that says what the path is and what to pass instead
(the command exits 2), rather than printing an empty table for a typo.
"""

from __future__ import annotations

import difflib
import json

import pyarrow.fs as pafs

from jeval_ray.records.schemas import DATASETS
from jeval_ray._fs import join_uri, list_dir, resolve_fs

_CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


class RunPathError(ValueError):
    """The path holds no run; ``runs`` lists the runs found under it (a runs root) or next to it."""

    def __init__(self, message: str, runs: list[dict] | None = None):
        super().__init__(message)
        self.runs = runs or []


def _is_run(fs: pafs.FileSystem, path: str) -> bool:
    names = {i.base_name for i in list_dir(fs, path)}
    return "manifest.json" in names or bool(names & set(DATASETS))


def _manifest(fs: pafs.FileSystem, path: str) -> dict:
    try:
        with fs.open_input_stream(f"{path}/manifest.json") as f:
            return json.loads(f.read().decode())
    except (OSError, ValueError):
        return {}


def read_manifest(run: str) -> dict:
    """A run's ``manifest.json`` ({} when it has none or it cannot be read)."""
    fs, path = resolve_fs(run)
    return _manifest(fs, path)


def list_runs(root: str) -> list[dict]:
    """The runs directly under ``root``: ``run_id``, ``path``, ``status``, ``episodes`` (grid size), ``created_at``."""
    fs, path = resolve_fs(root)
    out = []
    for info in sorted(list_dir(fs, path), key=lambda i: i.base_name):
        if info.type == pafs.FileType.Directory and _is_run(fs, info.path):
            m = _manifest(fs, info.path)
            out.append({"run_id": info.base_name, "path": join_uri(root, info.base_name), "status": m.get("status"),
                        "episodes": (m.get("grid") or {}).get("episodes"), "created_at": m.get("created_at")})
    return out


def runs_text(runs: list[dict]) -> str:
    return "\n".join(f"  {r['path']}  ({r['status'] or 'no manifest'}, {r['episodes'] or '?'} episodes in the grid, "
                     f"created {r['created_at'] or '?'})" for r in runs)


def check_run(run: str) -> None:
    """Raise ``RunPathError`` unless ``run`` is a run directory (local path or filesystem URI)."""
    try:
        fs, path = resolve_fs(run)
        kind = fs.get_file_info(path).type
    except (OSError, ValueError) as exc:
        raise RunPathError(f"cannot open {run}: {exc}") from exc
    if kind == pafs.FileType.NotFound:
        parent = path.rsplit("/", 1)[0] if "/" in path.strip("/") else "/"
        parent_uri = run.rstrip("/").rsplit("/", 1)[0] if "/" in run.rstrip("/") else "."
        # the runs next to it, as suggestions (not for a URI with a query: its parent is not a string cut)
        near = "?" not in run and fs.get_file_info(parent).type == pafs.FileType.Directory
        runs = list_runs(parent_uri) if near else []
        msg = f"no run at {run}: the path does not exist."
        close = difflib.get_close_matches(run.rstrip("/").rsplit("/", 1)[-1], [r["run_id"] for r in runs], n=1)
        if close:
            msg += f" Did you mean {join_uri(parent_uri, close[0])}?"
        if runs:
            msg += f"\nruns in {parent_uri}:\n{runs_text(runs)}"
        raise RunPathError(msg, runs)
    if kind == pafs.FileType.File:
        hint = (" It looks like a sweep config: run it with python -m jeval_ray.sweep --config "
                f"{run}, then report on the run directory the sweep prints (<out>/<run_id>)."
                if run.lower().endswith(_CONFIG_SUFFIXES) else " Pass a run directory: <out>/<run_id>.")
        raise RunPathError(f"{run} is a file, not a run directory.{hint}")
    if _is_run(fs, path):
        return
    runs = list_runs(run)
    if runs:
        raise RunPathError(f"{run} is a runs root, not a run: pass one of its {len(runs)} run(s):\n{runs_text(runs)}",
                           runs)
    raise RunPathError(f"{run} holds no run: no manifest.json and no {', '.join(d + '/' for d in DATASETS)} "
                       "(a run directory is <out>/<run_id>, as printed at the end of a sweep)")
