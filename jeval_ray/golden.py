"""The world golden: what every task generates, pinned per (task, seed), and the versions ledger.

``python -m jeval_ray.golden`` checks the pinned hashes; ``python -m jeval_ray.golden --repin``
regenerates them. This module is the one place that generates worlds, briefs and tool schemas
for the golden (``tests/test_world_versions.py`` and ``bench/bench_world_versions.py`` use it).

Two committed files (``tests/golden/``):

- ``worlds.json`` (the golden): per task its ``version`` (``WORLD_VERSION[task]`` when pinned),
  ``tools`` (sha256 of the task's tool schemas, as the agent sees them), and per pinned world
  (knob set x seed): ``world`` (the world's ``world_hash``: ledger, master data, documents, facts,
  key ids), ``brief`` (the brief of the full condition) and ``key`` (every field of the key the
  scorer reads: defect and decoy records with entry ids, types, criteria, amounts, required or
  clearing evidence and decisive facts, and the hidden entries), both sha256 cut to 16 hex;
  ``digest`` is the sha256 of the task's ``tools`` and ``worlds``.
- ``world_versions.json`` (the ledger, append-only): per task, per version, the digest that
  version pinned. A version's digest never changes: a world that changes gets a new version.

The pinned worlds: seeds 0-49 at the task's default knobs, and seeds 0-2 at 1e5 entries
(``n_entries``, the knob that sets the size of the simulated year). ``PINS`` is part of every
digest, so it stays fixed; more seeds are checked by ``bench/bench_world_versions.py``. Both files
live in the repository's ``tests/golden``: the command runs from a checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from jeval_ray.errors import ConfigError
from jeval_ray.world._version import WORLD_VERSION

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "worlds.json"
LEDGER = REPO / "tests" / "golden" / "world_versions.json"
VERSION_FILE = "jeval_ray/world/_version.py"
FORMAT = 1
#: knob set -> (knob overrides, seeds) of the pinned worlds
PINS: dict[str, tuple[dict, tuple[int, ...]]] = {
    "default": ({}, tuple(range(50))),
    "1e5": ({"n_entries": 100_000}, (0, 1, 2)),
}
SHORT = 16  # hex chars kept of the brief and key hashes
REPIN = "python -m jeval_ray.golden --repin"


def _sha(obj) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                                        default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------- what a task generates
def tool_schemas(task_id: str) -> list[dict]:
    """The schemas of the task's tools (the full condition), as the agent is given them."""
    from jeval_ray.tasks import get_task
    from jeval_ray.tools import tool_schemas as schemas

    spec = get_task(task_id)
    return schemas(spec, spec.tools)


def brief(world) -> str:
    """The brief of ``world`` in the full condition at the task's step budget."""
    from jeval_ray.env._brief import make_brief
    from jeval_ray.tasks import get_task

    spec = get_task(world.task_id)
    return make_brief(spec, world, spec.tools, spec.step_budget)


def key_facts(world) -> dict:
    """Everything of the world's key the scorer reads."""
    return {
        # a defect's other accepted amounts only where it has any (keys without them hash as before)
        "defects": [[d.entry_id, d.defect_type, d.criteria, list(d.required_evidence), float(d.misstatement),
                     list(d.facts), *([list(d.also_accepted)] if d.also_accepted else [])] for d in world.defects],
        "decoys": [[d.entry_id, d.decoy_type, list(d.clearing_evidence), list(d.facts)] for d in world.decoys],
        "hidden_entries": list(world.hidden_entries),
    }


def world_record(task_id: str, seed: int, knobs: dict) -> dict:
    """``{"world", "brief", "key"}`` of one world."""
    from jeval_ray.world import generate_world

    w = generate_world(task_id, seed, knobs)
    return {"world": w.world_hash, "brief": _sha(brief(w))[:SHORT], "key": _sha(key_facts(w))[:SHORT]}


def task_digest(block: dict) -> str:
    """The digest of a task's golden block: its tool schemas and every pinned world (not the version)."""
    return _sha({"tools": block["tools"], "worlds": block["worlds"]})


def compute(task_ids=None, pins: dict | None = None) -> dict:
    """The golden of ``task_ids`` (default: every task) over ``pins`` (default ``PINS``): ``{task: block}``.

    Worlds are made seed by seed across tasks, so the tasks of a seed share its simulated year."""
    from jeval_ray.tasks import TASK_IDS

    task_ids = list(task_ids or TASK_IDS)
    pins = PINS if pins is None else pins
    blocks = {t: {"version": WORLD_VERSION[t], "digest": "", "tools": _sha(tool_schemas(t)),
                  "worlds": {name: {} for name in pins}} for t in task_ids}
    for name, (knobs, seeds) in pins.items():
        for seed in seeds:
            for t in task_ids:
                blocks[t]["worlds"][name][str(seed)] = world_record(t, seed, knobs)
    for b in blocks.values():
        b["digest"] = task_digest(b)
    return blocks


# ---------------------------------------------------------------------------- files
def pins_json(pins: dict | None = None) -> dict:
    return {name: {"knobs": knobs, "seeds": list(seeds)} for name, (knobs, seeds) in (pins or PINS).items()}


def pins_of(golden: dict) -> dict:
    """The pins a golden file was made with."""
    return {name: (p["knobs"], tuple(p["seeds"])) for name, p in golden["pins"].items()}


def golden_text(blocks: dict, pins: dict | None = None) -> str:
    """The golden file's text: one line per world, so a diff shows which worlds changed."""
    lines = ["{", f' "format": {FORMAT},', f' "pins": {json.dumps(pins_json(pins), sort_keys=True)},', ' "tasks": {']
    for i, (t, b) in enumerate(blocks.items()):
        lines.append(f'  {json.dumps(t)}: {{"version": {b["version"]}, "digest": {json.dumps(b["digest"])}, '
                     f'"tools": {json.dumps(b["tools"])}, "worlds": {{')
        for j, (name, worlds) in enumerate(b["worlds"].items()):
            lines.append(f'   {json.dumps(name)}: {{')
            items = list(worlds.items())
            for k, (seed, rec) in enumerate(items):
                lines.append(f'    {json.dumps(seed)}: {json.dumps(rec, sort_keys=True)}' + ("," if k < len(items) - 1 else ""))
            lines.append("   }" + ("," if j < len(b["worlds"]) - 1 else ""))
        lines.append("  }}" + ("," if i < len(blocks) - 1 else ""))
    lines += [" }", "}", ""]
    return "\n".join(lines)


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def ledger_text(ledger: dict) -> str:
    from jeval_ray.tasks import TASK_IDS

    order = [t for t in TASK_IDS if t in ledger] + sorted(t for t in ledger if t not in TASK_IDS)
    body = {t: {v: ledger[t][v] for v in sorted(ledger[t], key=int)} for t in order}
    return json.dumps(body, indent=1) + "\n"


def head_ledger(path: Path = LEDGER) -> dict | None:
    """The ledger as committed at ``HEAD`` of the git checkout holding ``path``; ``None`` outside git history."""
    path = Path(path).resolve()
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, capture_output=True, text=True,
                             timeout=30)
        if top.returncode != 0:
            return None
        rel = path.relative_to(Path(top.stdout.strip()).resolve()).as_posix()
        shown = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=path.parent, capture_output=True, text=True, timeout=30)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if shown.returncode != 0:
        return None
    return json.loads(shown.stdout)


# ---------------------------------------------------------------------------- checks
def _seeds_text(seeds: list[str]) -> str:
    return ", ".join(seeds[:8]) + (f" … ({len(seeds)} in all)" if len(seeds) > 8 else "")


def differences(golden: dict, blocks: dict) -> dict[str, list[str]]:
    """Per task whose recomputed block differs from the golden's: what differs, in words."""
    out: dict[str, list[str]] = {}
    for t, b in blocks.items():
        g = golden["tasks"].get(t)
        if g is None:
            out[t] = ["not in the golden"]
            continue
        what = []
        if g["tools"] != b["tools"]:
            what.append("tool schemas changed")
        for name, worlds in b["worlds"].items():
            old = g["worlds"].get(name, {})
            for part in ("world", "brief", "key"):
                seeds = [s for s, rec in worlds.items() if (old.get(s) or {}).get(part) != rec[part]]
                if seeds:
                    label = {"world": "world_hash", "brief": "brief", "key": "key facts"}[part]
                    what.append(f"{label} changed at {name} knobs, seed(s) {_seeds_text(seeds)}")
        if not what and g["digest"] != b["digest"]:
            what.append("digest differs from the golden's worlds (the golden file was edited by hand)")
        if what:
            out[t] = what
    return out


def changed_message(diff: dict[str, list[str]], golden: dict) -> str:
    lines = [f"the worlds of {len(diff)} task(s) differ from the golden {GOLDEN.relative_to(REPO).as_posix()}:"]
    for t, what in diff.items():
        lines += [f"  {t} (pinned at world version {golden['tasks'].get(t, {}).get('version', '?')}): " + "; ".join(what)]
    bumps = ", ".join(f"{t} -> {WORLD_VERSION.get(t, 0) + 1}" for t in diff)
    lines += ["Fix: if the change is intended, bump WORLD_VERSION for these tasks in "
              f"{VERSION_FILE} ({bumps}), run `{REPIN}`, and commit both golden files with the change. "
              "If it is not intended, your change alters worlds, briefs, tool schemas or key facts that must stay "
              "byte-identical: undo that part."]
    return "\n".join(lines)


def version_problems(golden: dict, ledger: dict, head: dict | None = None) -> list[str]:
    """Why the golden, ``WORLD_VERSION``, the ledger (and the ledger at git ``HEAD``) disagree; [] when they agree."""
    out = []
    for t, v in WORLD_VERSION.items():
        g = golden["tasks"].get(t)
        if g is None:
            out.append(f"{t}: not in the golden. Fix: run `{REPIN}`.")
            continue
        if g["version"] != v:
            out.append(f"{t}: WORLD_VERSION is {v} but the golden is pinned at version {g['version']}. "
                       f"Fix: run `{REPIN}` (after a bump) or set WORLD_VERSION['{t}'] back to {g['version']}.")
            continue
        pinned = ledger.get(t, {}).get(str(v))
        if pinned is None:
            out.append(f"{t}: version {v} is not in the ledger {LEDGER.relative_to(REPO).as_posix()}. Fix: run `{REPIN}`.")
        elif pinned != g["digest"]:
            out.append(f"{t}: the golden's digest of version {v} is not the one the ledger recorded for it: the worlds "
                       f"changed under version {v}. Fix: bump WORLD_VERSION['{t}'] to {_next(t, ledger, head)} in "
                       f"{VERSION_FILE} and run `{REPIN}`.")
    for t, versions in (head or {}).items():
        for ver, digest in versions.items():
            now = ledger.get(t, {}).get(ver)
            if now != digest:
                out.append(f"{t}: version {ver} was pinned at HEAD with digest {digest[:16]}… and the working copy's "
                           f"ledger {'drops it' if now is None else 'changes it to ' + now[:16] + '…'}: the ledger is "
                           f"append-only. Fix: restore that entry (git checkout HEAD -- "
                           f"{LEDGER.relative_to(REPO).as_posix()}), bump WORLD_VERSION['{t}'] to "
                           f"{_next(t, ledger, head)} in {VERSION_FILE} and run `{REPIN}`.")
    return out


def _next(t: str, *ledgers) -> int:
    seen = [int(v) for led in ledgers if led for v in led.get(t, {})] + [WORLD_VERSION.get(t, 0)]
    return max(seen) + 1


def repin(blocks: dict, ledger: dict, head: dict | None = None) -> dict:
    """The new ledger for freshly computed ``blocks``; raises ``ConfigError`` naming every task whose worlds
    changed under a version already pinned (in the working copy's ledger or at git ``HEAD``)."""
    new = {t: dict(v) for t, v in ledger.items()}
    refused = []
    for t, b in blocks.items():
        v = str(b["version"])
        for led, where in ((ledger, "the ledger"), (head or {}, "the ledger at git HEAD")):
            pinned = led.get(t, {}).get(v)
            if pinned is not None and pinned != b["digest"]:
                refused.append(f"{t}: its worlds changed but version {v} is already pinned in {where} with another "
                               f"digest; bump WORLD_VERSION['{t}'] to {_next(t, ledger, head)}")
                break
        else:
            known = [int(x) for x in ledger.get(t, {})]
            if v not in ledger.get(t, {}) and known and int(v) < max(known):
                refused.append(f"{t}: version {v} is below the highest pinned version {max(known)}; versions only go "
                               f"up: set WORLD_VERSION['{t}'] to {_next(t, ledger, head)}")
            new.setdefault(t, {})[v] = b["digest"]
    if refused:
        raise ConfigError("refusing to re-pin: " + "; ".join(refused) + f". Fix: edit {VERSION_FILE} as said and run "
                          f"`{REPIN}` again (nothing was written).")
    return new


# ---------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jeval_ray.golden", description="Check (default) or re-pin the world "
                                 "golden (tests/golden/worlds.json) and its versions ledger (world_versions.json).")
    ap.add_argument("--repin", action="store_true", help="regenerate the golden and append new versions to the ledger; "
                    "refuses to change the digest of a version already pinned (bump WORLD_VERSION instead)")
    ap.add_argument("--task", action="append", metavar="ID", help="check only this task (repeatable; not with --repin)")
    args = ap.parse_args(argv)
    if args.repin and args.task:
        print("error: --repin regenerates every task; drop --task.", file=sys.stderr)
        return 2
    if not GOLDEN.parent.is_dir():
        print(f"error: no {GOLDEN.parent}: the golden lives in the repository's tests/golden. Fix: run from a "
              "checkout of jeval_ray (an editable install).", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    blocks = compute(args.task)
    took = time.perf_counter() - t0
    ledger = read_json(LEDGER) if LEDGER.exists() else {}
    head = head_ledger()
    if args.repin:
        try:
            new_ledger = repin(blocks, ledger, head)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(golden_text(blocks))
        LEDGER.write_text(ledger_text(new_ledger))
        added = sorted(set((t, v) for t, vs in new_ledger.items() for v in vs)
                       - set((t, v) for t, vs in ledger.items() for v in vs))
        print(f"pinned {sum(len(w) for b in blocks.values() for w in b['worlds'].values())} worlds of {len(blocks)} "
              f"tasks in {took:.1f} s; new ledger entries: {', '.join(f'{t} v{v}' for t, v in added) or 'none'}")
        return 0
    golden = read_json(GOLDEN)
    if pins_of(golden) != PINS:
        print(f"error: the golden's pins differ from jeval_ray.golden.PINS. Fix: run `{REPIN}`.", file=sys.stderr)
        return 1
    diff = differences(golden, blocks)
    problems = version_problems(golden, ledger, head) if not args.task else []
    if diff:
        print(changed_message(diff, golden), file=sys.stderr)
    for p in problems:
        print(p, file=sys.stderr)
    if diff or problems:
        return 1
    print(f"golden ok: {len(blocks)} tasks, {sum(len(w) for b in blocks.values() for w in b['worlds'].values())} worlds "
          f"in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
