"""The agent's tools: their schemas and arguments, and the episode state they read and write.

``TOOLS`` maps each tool name to its definition (argument model, JSON schema, run function);
``tool_schemas`` gives a task's schemas (its ``flag_entry`` states which criteria want an amount);
``EpisodeState`` is what an episode remembers (opened documents, dispositions, the summary).
The scorer reads the same state, so this layer sits below ``jeval_ray.scoring``; ``JEEnv``
(``jeval_ray.env``) dispatches to these tools, fits each result to the episode's character budget
(``fit_result``: paged as valid JSON with ``next_offset``) and asks the scorer for the reward.
"""

from jeval_ray.tools._paging import MIN_BUDGET, PAGE_FIELDS, fit_result
from jeval_ray.tools._tools import TOOLS, Disposition, EpisodeState, ToolError, digit_test, tool_schemas

__all__ = ["MIN_BUDGET", "PAGE_FIELDS", "TOOLS", "Disposition", "EpisodeState", "ToolError", "digit_test", "fit_result",
           "tool_schemas"]
