"""World versions: every pinned world, brief, tool schema set and key equals the golden, and a change to
any of them comes with a bump of WORLD_VERSION (jeval_ray.golden, docs/tasks.md "World versions")."""

from __future__ import annotations

import ast
import copy
import subprocess
import sys
from pathlib import Path

import pytest

from jeval_ray import golden as G
from jeval_ray.errors import ConfigError
from jeval_ray.tasks import TASK_IDS
from jeval_ray.world._version import WORLD_VERSION, world_version

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pinned() -> dict:
    return G.read_json(G.GOLDEN)


@pytest.fixture(scope="module")
def recomputed(pinned) -> dict:
    # every pinned world: 16 tasks x 50 seeds at default knobs and 16 x 3 at 1e5 entries (~25 s on one core)
    return G.compute(TASK_IDS, G.pins_of(pinned))


def test_golden_pins_are_the_modules(pinned):
    assert G.pins_of(pinned) == G.PINS, f"the golden's pins differ from jeval_ray.golden.PINS; run `{G.REPIN}`"
    assert list(pinned["tasks"]) == list(TASK_IDS)


def test_recomputed_worlds_equal_the_golden(pinned, recomputed):
    diff = G.differences(pinned, recomputed)
    assert not diff, G.changed_message(diff, pinned)
    for t in TASK_IDS:
        assert recomputed[t]["digest"] == pinned["tasks"][t]["digest"] == G.task_digest(pinned["tasks"][t])


def test_versions_golden_and_ledger_agree(pinned):
    problems = G.version_problems(pinned, G.read_json(G.LEDGER), G.head_ledger())
    assert not problems, "\n".join(problems)


def test_every_task_has_a_version():
    assert list(WORLD_VERSION) == list(TASK_IDS)
    assert all(isinstance(v, int) and v >= 1 for v in WORLD_VERSION.values())
    assert world_version("JE-3") == WORLD_VERSION["JE-3"]
    with pytest.raises(ConfigError, match="JE-99"):
        world_version("JE-99")


def test_version_module_imports_only_errors():
    tree = ast.parse((ROOT / "jeval_ray" / "world" / "_version.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "jeval_ray.errors"}, imported


def test_a_changed_world_is_named_with_what_to_do(pinned):
    changed = {t: copy.deepcopy(pinned["tasks"][t]) for t in ("JE-3", "JE-7")}
    changed["JE-3"]["worlds"]["default"]["7"]["brief"] = "0" * 16
    changed["JE-3"]["digest"] = G.task_digest(changed["JE-3"])
    diff = G.differences(pinned, changed)
    assert list(diff) == ["JE-3"]
    assert diff["JE-3"] == ["brief changed at default knobs, seed(s) 7"]
    msg = G.changed_message(diff, pinned)
    assert f"JE-3 -> {WORLD_VERSION['JE-3'] + 1}" in msg and G.REPIN in msg and G.VERSION_FILE in msg
    changed["JE-7"]["tools"] = "1" * 64
    changed["JE-7"]["worlds"]["1e5"]["2"]["key"] = "2" * 16
    diff = G.differences(pinned, changed)
    assert diff["JE-7"] == ["tool schemas changed", "key facts changed at 1e5 knobs, seed(s) 2"]


def _block(version: int, digest: str) -> dict:
    return {"version": version, "digest": digest, "tools": "", "worlds": {}}


def test_repin_refuses_to_change_a_pinned_version():
    ledger = {"JE-1": {"1": "a" * 64}, "JE-2": {"1": "b" * 64}}
    with pytest.raises(ConfigError) as exc:
        G.repin({"JE-1": _block(1, "c" * 64), "JE-2": _block(1, "b" * 64)}, ledger)
    msg = str(exc.value)
    assert "JE-1" in msg and "JE-2" not in msg
    # the next version above both the ledger's (1) and the code's
    assert f"bump WORLD_VERSION['JE-1'] to {max(1, WORLD_VERSION['JE-1']) + 1}" in msg and "nothing was written" in msg and G.REPIN in msg
    # the ledger at HEAD counts too: a working-copy ledger edited by hand does not open the way
    with pytest.raises(ConfigError, match=r"JE-1.*ledger at git HEAD"):
        G.repin({"JE-1": _block(1, "c" * 64)}, {"JE-1": {"1": "c" * 64}}, head=ledger)
    # versions only go up
    with pytest.raises(ConfigError, match=r"JE-1: version 1 is below the highest pinned version 2"):
        G.repin({"JE-1": _block(1, "d" * 64)}, {"JE-1": {"2": "a" * 64}})


def test_repin_appends_a_bumped_version():
    ledger = {"JE-1": {"1": "a" * 64}}
    new = G.repin({"JE-1": _block(2, "c" * 64), "JE-2": _block(1, "b" * 64)}, ledger, head=ledger)
    assert new == {"JE-1": {"1": "a" * 64, "2": "c" * 64}, "JE-2": {"1": "b" * 64}}
    assert ledger == {"JE-1": {"1": "a" * 64}}  # not modified in place
    assert G.repin({"JE-1": _block(1, "a" * 64)}, ledger) == ledger  # unchanged worlds: nothing new


def test_version_problems_name_the_task_and_the_fix(pinned):
    ledger = G.read_json(G.LEDGER)
    assert G.version_problems(pinned, ledger, ledger) == []
    # re-pinning a changed world under its old version (golden and ledger rewritten, HEAD still has the old digest)
    g2, l2 = copy.deepcopy(pinned), copy.deepcopy(ledger)
    v = str(WORLD_VERSION["JE-5"])
    g2["tasks"]["JE-5"]["digest"] = l2["JE-5"][v] = "e" * 64
    problems = G.version_problems(g2, l2, ledger)
    assert len(problems) == 1 and problems[0].startswith(f"JE-5: version {v} was pinned at HEAD")
    assert f"bump WORLD_VERSION['JE-5'] to {int(v) + 1}" in problems[0]
    # the golden changed without the ledger
    problems = G.version_problems(g2, ledger, None)
    assert problems == [f"JE-5: the golden's digest of version {v} is not the one the ledger recorded for it: the "
                        f"worlds changed under version {v}. Fix: bump WORLD_VERSION['JE-5'] to {int(v) + 1} in "
                        f"{G.VERSION_FILE} and run `{G.REPIN}`."]
    # a version bumped without a re-pin
    g3 = copy.deepcopy(pinned)
    g3["tasks"]["JE-9"]["version"] = WORLD_VERSION["JE-9"] + 1
    problems = G.version_problems(g3, ledger, None)
    assert len(problems) == 1 and problems[0].startswith("JE-9: WORLD_VERSION is") and G.REPIN in problems[0]


def test_ledger_at_head_is_read_from_git():
    head = G.head_ledger()
    if head is None:
        pytest.skip("not in a git checkout whose HEAD holds the ledger")
    assert set(head) <= set(TASK_IDS)


def test_cli_refuses_repin_of_one_task():
    r = subprocess.run([sys.executable, "-m", "jeval_ray.golden", "--repin", "--task", "JE-1"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 2 and "--repin regenerates every task" in r.stderr
