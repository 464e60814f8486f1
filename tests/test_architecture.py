"""The package's structure: its layers and acyclic imports (the import-linter contracts in pyproject.toml),
the one dynamic import, the public import paths, and how the built-in agents learn their task.

docs/architecture.md gives the layers and why each sits where it does.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

import jeval_ray

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(jeval_ray.__file__).resolve().parent


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), ast.parse(path.read_text(encoding="utf-8"))


@contextlib.contextmanager
def _loggers_kept():
    """import-linter configures logging with ``disable_existing_loggers``, which silences every logger this process
    has made (httpx, ray, jeval_ray's own); later tests in the same worker would see no log lines. Put them back."""
    loggers = [x for x in logging.root.manager.loggerDict.values() if isinstance(x, logging.Logger)]
    disabled = [x.disabled for x in loggers]
    try:
        yield
    finally:
        for x, d in zip(loggers, disabled):
            x.disabled = d


def test_the_layers_and_acyclic_contracts_hold():
    """Every import (inside functions too; not those under TYPE_CHECKING) points down the layers, the
    layers name every subpackage and module of the package (exhaustive), and no package has a cycle
    between its subpackages or modules."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), _loggers_kept():
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    text = out.getvalue()
    assert code == 0, text
    assert "layers" in text and "KEPT" in text and "BROKEN" not in text


def test_the_contracts_are_exhaustive_and_catch_an_upward_import(tmp_path):
    """The layers contract is exhaustive and has teeth: an import from a low layer to a high one (the
    environment's tools importing the sweep) breaks it."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in cfg["contracts"] if c["type"] == "layers")
    assert layers["exhaustive"] is True and layers["containers"] == ["jeval_ray"]
    named = {m.strip() for layer in layers["layers"] for m in layer.replace(":", "|").split("|")}
    children = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
                if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert children <= named, f"subpackages or modules outside every layer: {sorted(children - named)}"

    # the same contracts over a copy of the package with one upward import added (in a fresh process,
    # where the copy comes first on the path)
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "jeval_ray", ignore=shutil.ignore_patterns("__pycache__"))
    tools = copy / "jeval_ray" / "tools" / "__init__.py"
    tools.write_text(tools.read_text() + "\n\ndef _upward():\n    from jeval_ray.sweep import driver  # noqa\n")
    run = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                          f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))"],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "jeval_ray.tools -> jeval_ray.sweep.driver" in run.stdout


def _import_module_calls():
    calls = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = ast.unparse(node.func)
                if f.endswith("import_module") or f in ("__import__", "importlib.__import__"):
                    calls.append((name, ast.unparse(node)))
    return calls


def test_every_dynamic_import_is_listed():
    """A dynamic import hides a dependency from the contracts: the package has exactly one, which loads
    a user's judge given as ``module:function`` (never a ``jeval_ray.*`` name). The task registry
    (``jeval_ray.tasks``) imports every task module by name."""
    assert _import_module_calls() == [("jeval_ray.sweep.judges", "importlib.import_module(mod)")]


def test_the_task_registry_holds_every_task_module():
    from jeval_ray import tasks

    assert [tasks.task_module(t).SPEC.id for t in tasks.TASK_IDS] == list(tasks.TASK_IDS)
    assert tasks.task_module("je3") is tasks.je03


def test_public_import_paths_keep_working():
    """The paths users and the README rely on resolve to the objects that now live in lower layers."""
    from jeval_ray.agents import Action, Agent, Kit, Observation, Turn
    from jeval_ray.builder import World as BuiltWorld
    from jeval_ray.env import JEEnv, TOOLS, EpisodeState
    from jeval_ray.models import ModelConfig, make_client
    from jeval_ray.protocol import Action as PAction, Agent as PAgent, Observation as PObservation, Turn as PTurn
    from jeval_ray.protocol.kit import Kit as PKit
    from jeval_ray.tasks import TaskSpec, get_task
    from jeval_ray.tools import TOOLS as T2, EpisodeState as E2
    from jeval_ray.world import World, WorldBuilder, generate_world

    assert (Action, Agent, Observation, Turn, Kit) == (PAction, PAgent, PObservation, PTurn, PKit)
    assert (TOOLS, EpisodeState, World) == (T2, E2, BuiltWorld)
    assert callable(JEEnv) and callable(generate_world) and callable(make_client) and WorldBuilder and ModelConfig
    assert get_task("JE-1").__class__ is TaskSpec


def test_the_environment_scores_through_its_injected_scorer():
    """``JEEnv`` takes its scorer; by default the reward is ``score_episode``'s score, as before."""
    from jeval_ray.env import JEEnv
    from jeval_ray.scoring import score_episode

    env = JEEnv("JE-1")
    assert env.scorer is score_episode
    env.reset(seed=0)
    _, reward, done, _, info = env.step({"tool": "submit", "args": {"summary": "nothing"}})
    assert done and reward == info["score"].score == score_episode(env.spec, env.world, env.state, env.steps).score

    seen = []

    def scorer(spec, world, state, steps):
        seen.append((spec.id, world.seed, len(steps)))
        return score_episode(spec, world, state, steps)

    env = JEEnv("JE-1", scorer=scorer)
    env.reset(seed=1)
    env.step({"tool": "submit", "args": {"summary": "nothing"}})
    assert seen == [("JE-1", 1, 1)]


def test_a_builtin_agent_takes_its_task_and_budget_from_the_episode_not_the_brief():
    """The scripted agents are told their task and step budget at reset (the reset's ``info``); a brief
    naming another task or budget does not steer them, and without ``info`` they refuse clearly."""
    from jeval_ray.agents import ScriptedAgent, make_agent
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode
    from jeval_ray.protocol import EPISODE_INFO_KEYS

    env = JEEnv("JE-3")
    brief, info = env.reset(seed=0)
    lying = brief.replace("JE-3", "JE-9").replace(f"You have {info['step_budget']} tool calls", "You have 7 tool calls")
    assert lying != brief
    seen = []

    def strategy_for(task_id):
        def probe(kit):
            seen.append((task_id, kit.task_id, kit.calls_left))
            yield from kit.submit("probe")
        return probe

    agent = ScriptedAgent("probe", strategy_for)
    agent.reset(lying, info["tools"], 0, info={k: info[k] for k in EPISODE_INFO_KEYS})
    agent.act_sync([])
    assert seen == [("JE-3", "JE-3", info["step_budget"])]
    with pytest.raises(ValueError, match="task id and step budget"):
        make_agent("naive", 0).reset(brief, info["tools"], 0)
    # an episode tells them: careful solves JE-3 as before
    out = asyncio.run(play_episode(JEEnv("JE-3"), make_agent("careful", 0), 0))
    assert out.score.outcome >= 0.95


def test_an_agent_written_before_info_existed_still_plays():
    """A user's agent whose ``reset`` takes only ``(brief, tools, seed)`` is reset without ``info``."""
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode
    from jeval_ray.protocol import Action, Agent, Turn

    class OldAgent(Agent):
        def reset(self, brief, tools, seed):
            self.seen = (len(brief) > 0, len(tools), seed)

        async def act(self, observations):
            return Turn(actions=[Action("submit", {"summary": "nothing to report"})])

    agent = OldAgent()
    out = asyncio.run(play_episode(JEEnv("JE-1"), agent, 2))
    assert out.status == "completed" and out.termination == "submitted" and agent.seen[0] and agent.seen[2] == 2


def test_only_the_test_servers_brain_reads_the_task_off_the_brief():
    """Reading the engagement or budget line of a brief is the test server's brain's job alone (it sees
    only the wire protocol); the brief's writer is ``jeval_ray.env._brief``."""
    readers = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    "Procedure asked for)" in node.value or "You have (" in node.value):
                readers.append(name)
    assert readers == ["jeval_ray.testserver._brains", "jeval_ray.testserver._brains"]
