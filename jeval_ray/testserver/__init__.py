"""A local OpenAI/Anthropic-compatible model server for tests and demos (loopback only).

In-process::

    with LocalModelServer(brain=ScriptedBrain(), faults=Faults(seed=0)) as server:
        config = ModelConfig(name="local", model="m", base_url=server.url)
        server.faults.queue("rate_limit", 2)   # the next two requests get 429

From a shell: ``python -m jeval_ray.testserver --port 8765 --brain builtin:careful --faults rate_limit:0.1``.
"""

from jeval_ray.testserver._app import LOOPBACK_HOSTS, LocalModelServer, RequestRecord
from jeval_ray.testserver._brains import (
    AgentBrain,
    Brain,
    BrainReply,
    BrainRequest,
    ScriptedBrain,
    ToolCall,
    builtin_brain,
    conversation_key,
)
from jeval_ray.testserver._faults import FAULT_KINDS, LLAMA_CPP_RESPONSE_FORMATS, MANY_TOOL_CALLS, Faults
from jeval_ray.testserver._judge import JUDGE_MODES, JudgeBrain

__all__ = [
    "LocalModelServer",
    "RequestRecord",
    "LOOPBACK_HOSTS",
    "Faults",
    "FAULT_KINDS",
    "LLAMA_CPP_RESPONSE_FORMATS",
    "MANY_TOOL_CALLS",
    "Brain",
    "BrainRequest",
    "BrainReply",
    "ToolCall",
    "ScriptedBrain",
    "AgentBrain",
    "builtin_brain",
    "conversation_key",
    "JudgeBrain",
    "JUDGE_MODES",
]
