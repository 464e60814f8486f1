"""The episode environment: tools with their schemas, the brief, and ``JEEnv`` (reset/step)."""

from jeval_ray.env._env import JEEnv, StepLog, canonical_args, observation_hash, resolve_tools
from jeval_ray.env._tools import TOOLS, Disposition, EpisodeState, ToolError, digit_test

__all__ = ["JEEnv", "StepLog", "TOOLS", "Disposition", "EpisodeState", "ToolError", "canonical_args",
           "digit_test", "observation_hash", "resolve_tools"]
