"""The episode environment: ``JEEnv`` (reset/step), the brief, and the tools it dispatches to.

``JEEnv`` sits above the scorer (``jeval_ray.scoring``), which it asks for the reward; the tools and
the episode state both read live one layer below the scorer (``jeval_ray.tools``) and are
re-exported here.
"""

from jeval_ray.env._env import JEEnv, Scorer, StepLog, canonical_args, observation_hash, resolve_tools
from jeval_ray.tools import TOOLS, Disposition, EpisodeState, ToolError, digit_test

__all__ = ["JEEnv", "Scorer", "StepLog", "TOOLS", "Disposition", "EpisodeState", "ToolError", "canonical_args",
           "digit_test", "observation_hash", "resolve_tools"]
