"""The local model server: routes, the official SDK, faults, the agent adapter and the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import httpx
import openai
import pytest

from jeval_ray.protocol import Action, Agent, Observation, Turn
from jeval_ray.agents.llm import LLMAgent
from jeval_ray.errors import ConfigError
from jeval_ray.models import ModelConfig
from jeval_ray.testserver import AgentBrain, BrainRequest, Faults, LocalModelServer, builtin_brain
from jeval_ray.testserver.__main__ import main

TOOLS = [
    {"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("list_documents", "query_ledger", "get_entry", "submit")
]
BRIEF = "Audit brief."


def test_the_server_refuses_non_loopback_hosts():
    with pytest.raises(ConfigError, match="loopback"):
        LocalModelServer(host="0.0.0.0")


def test_starts_on_an_ephemeral_port_and_stops():
    server = LocalModelServer()
    port = server.start()
    assert port > 0 and server.url == f"http://127.0.0.1:{port}/v1"
    assert httpx.get(f"{server.url}/models").json()["data"][0]["id"] == "jeval-testserver"
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)


def test_the_official_openai_sdk_parses_tool_calls():
    with LocalModelServer() as server:
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        reply = client.chat.completions.create(
            model="any", messages=[{"role": "system", "content": BRIEF}, {"role": "user", "content": "go"}], tools=TOOLS
        )
        models = client.models.list()
    call = reply.choices[0].message.tool_calls[0]
    assert call.type == "function" and call.function.name == "list_documents"
    assert json.loads(call.function.arguments) == {}
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert [m.id for m in models.data] == ["jeval-testserver"]


def test_faults_can_be_changed_at_runtime_over_http():
    with LocalModelServer() as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        admin = httpx.post(f"http://127.0.0.1:{server.port}/admin/faults", json={"next": {"server_error": 1}, "server_error_status": 502})
        assert admin.status_code == 200
        assert httpx.post(f"{server.url}/chat/completions", json=body).status_code == 502
        assert httpx.post(f"{server.url}/chat/completions", json=body).status_code == 200
        bad = httpx.post(f"http://127.0.0.1:{server.port}/admin/faults", json={"next": {"explode": 1}})
        assert bad.status_code == 400 and "unknown fault" in bad.json()["error"]["message"]
        log = httpx.get(f"http://127.0.0.1:{server.port}/admin/requests").json()["requests"]
    assert [r["status"] for r in log] == [502, 200]


def test_the_rpm_limit_answers_429_with_the_wait_and_counts_rejections():
    with LocalModelServer(faults=Faults(rpm_limit=2, rpm_window_s=5.0)) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        answers = [httpx.post(f"{server.url}/chat/completions", json=body) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert 4000 < int(answers[2].headers["retry-after-ms"]) <= 5001
    assert server.rpm_rejections == 1 and server.requests[2].fault == "rpm_limit"


def test_probabilistic_faults_are_reproducible_from_the_seed():
    def draws(seed: int) -> list:
        faults = Faults(probabilities={"drop": 0.3, "server_error": 0.2}, seed=seed)
        return [faults.draw() for _ in range(60)]

    assert draws(5) == draws(5)
    assert draws(5) != draws(6)
    assert {"drop", "server_error", None} == set(draws(5))


def test_fault_specs_parse_and_bad_ones_are_refused():
    faults = Faults.parse("rate_limit:0.5, drop*2")
    assert [faults.draw(), faults.draw()] == ["drop", "drop"] and faults.probabilities == {"rate_limit": 0.5}
    with pytest.raises(ConfigError, match="unknown fault"):
        Faults.parse("explode:0.1")
    with pytest.raises(ConfigError, match="probability"):
        Faults.parse("drop:2")
    with pytest.raises(ConfigError, match="kind:probability"):
        Faults.parse("drop")


def test_bad_requests_and_brain_failures_get_an_answer_not_a_dead_server():
    def broken_brain(request: BrainRequest):
        raise RuntimeError("brain bug")

    with LocalModelServer(broken_brain) as server:
        not_json = httpx.post(f"{server.url}/chat/completions", content=b"[1, 2")
        not_object = httpx.post(f"{server.url}/chat/completions", json=[1, 2])
        failed = httpx.post(f"{server.url}/chat/completions", json={"model": "m", "messages": []})
        models = httpx.get(f"{server.url}/models")
    assert (not_json.status_code, not_object.status_code) == (400, 400)
    assert failed.status_code == 500 and "brain bug" in failed.json()["error"]["message"]
    assert models.status_code == 200


def test_a_dropped_connection_gets_no_reply():
    with LocalModelServer() as server:
        server.faults.queue("drop")
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(f"{server.url}/chat/completions", json={"model": "m", "messages": []})
    assert server.requests[0].status is None


# -- the built-in agent adapter ------------------------------------------------------------------


class FakeAgent(Agent):
    """Lists, looks at an entry, pauses without a tool call, then submits."""

    name = "fake"

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.resets: list[tuple] = []
        self.received: list[list[Observation]] = []

    def reset(self, brief: str, tools: list[dict], seed: int, info: dict | None = None) -> None:
        self.resets.append((brief, [t["function"]["name"] for t in tools], seed))

    async def act(self, observations: list[Observation]) -> Turn:
        self.received.append(observations)
        step = len(self.received)
        if step == 1:
            return Turn(
                [Action("query_ledger", {"limit": 2}), Action("get_entry", '{"entry_id": "JE-1"}', "mine")],
                text="start",
                reasoning_trace="plan",
            )
        if step == 2:
            return Turn([], text="thinking")
        return Turn([Action("submit", {"summary": f"seed {self.seed}"})])


class FakeFactory:
    def __init__(self) -> None:
        self.agents: list[FakeAgent] = []

    def __call__(self, seed: int) -> FakeAgent:
        self.agents.append(FakeAgent(seed))
        return self.agents[-1]


def test_an_llm_agent_can_play_a_builtin_agent_through_the_server():
    factory = FakeFactory()
    with LocalModelServer(AgentBrain(factory)) as server:
        agent = LLMAgent(ModelConfig(name="via-http", model="fake", base_url=server.url, max_attempts=2))
        agent.reset(BRIEF, TOOLS, seed=42)

        async def episode() -> list[Turn]:
            first = await agent.act([])
            ids = [a.call_id for a in first.actions]
            second = await agent.act(
                [Observation(ids[0], "query_ledger", "2 rows", False), Observation(ids[1], "get_entry", "Error: no such entry", True)]
            )
            third = await agent.act([Observation(None, "", "Please call a tool.", False)])
            await agent.aclose()
            return [first, second, third]

        first, second, third = asyncio.run(episode())
    (inner,) = factory.agents
    assert inner.seed == 42 and inner.resets == [(BRIEF, ["list_documents", "query_ledger", "get_entry", "submit"], 42)]
    assert [(a.tool, json.loads(a.args)) for a in first.actions] == [("query_ledger", {"limit": 2}), ("get_entry", {"entry_id": "JE-1"})]
    assert first.actions[1].call_id == "mine" and first.reasoning_trace == "plan"
    assert inner.received[0] == []
    assert [(o.call_id, o.tool, o.text, o.is_error) for o in inner.received[1]] == [
        (first.actions[0].call_id, "query_ledger", "2 rows", False),
        ("mine", "get_entry", "Error: no such entry", True),
    ]
    assert second.actions == [] and second.text == "thinking"
    assert inner.received[2] == [Observation(None, "", "Please call a tool.", False)]
    assert [a.tool for a in third.actions] == ["submit"] and json.loads(third.actions[0].args) == {"summary": "seed 42"}


async def play(env, agent: Agent, seed: int) -> float:
    """A minimal episode loop: the score the agent reaches (the runner owns the real loop)."""
    brief, info = env.reset(seed)
    agent.reset(brief, info["tools"], seed, info={"task_id": info["task_id"], "step_budget": info["step_budget"]})
    observations: list[Observation] = []
    while True:
        turn = await agent.act(observations)
        assert turn.stop_reason is None, turn.stop_reason
        observations = [] if turn.actions else [Observation(None, "", "Call a tool.", False)]
        for action in turn.actions:
            text, _, terminated, truncated, step = env.step(action)
            observations.append(Observation(action.call_id, action.tool, text, step["is_error"]))
            if terminated or truncated:
                return step["score"].score


def test_a_builtin_agent_scores_the_same_through_a_faulty_server():
    from jeval_ray.agents import make_agent
    from jeval_ray.env import JEEnv

    direct = asyncio.run(play(JEEnv("JE-2"), make_agent("careful", 1), 1))
    faults = Faults(probabilities={"rate_limit": 0.1, "drop": 0.05, "server_error": 0.05}, seed=1, retry_after_s=None, retry_after_ms=10)
    with LocalModelServer(builtin_brain("careful"), faults) as server:
        # Built-in agents read whole JSON observations: no truncation on this path.
        config = ModelConfig(name="careful-via-http", model="careful", base_url=server.url, max_attempts=10,
                             backoff_base_s=0.01, max_observation_chars=10**8, context_window=10**9)
        via_http = asyncio.run(play(JEEnv("JE-2"), LLMAgent(config), 1))
    assert via_http == direct
    assert any(r.fault for r in server.requests)


def request(seed: int | None, messages: list[dict]) -> BrainRequest:
    return BrainRequest(model="m", system=BRIEF, messages=messages, tools=TOOLS, seed=seed)


def test_the_adapter_keeps_one_agent_per_conversation():
    factory = FakeFactory()
    brain = AgentBrain(factory)
    start = [{"role": "user", "content": "Begin."}]
    try:
        brain(request(1, start))
        brain(request(2, start))
        brain(request(1, start + [{"role": "assistant", "content": "start"}, {"role": "user", "content": "go on"}]))
    finally:
        brain.close()
    assert [a.seed for a in factory.agents] == [1, 2]
    assert len(factory.agents[0].received) == 2 and len(factory.agents[1].received) == 1


def test_a_repeated_request_gets_the_same_reply_without_a_new_turn():
    factory = FakeFactory()
    brain = AgentBrain(factory)
    start = [{"role": "user", "content": "Begin."}]
    try:
        first = brain(request(1, start))
        ids = [c.id for c in first.tool_calls]
        calls = [{"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments_text()}}
                 for i, c in zip(ids, first.tool_calls)]
        later = start + [{"role": "assistant", "content": "start", "tool_calls": calls}] + [
            {"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids]
        second = brain(request(1, later))
        again = brain(request(1, later))  # the client retried: its answer was lost
    finally:
        brain.close()
    assert again is second and second.text == "thinking"
    assert len(factory.agents) == 1 and len(factory.agents[0].received) == 2


def test_identical_first_requests_are_separate_episodes():
    # same brief, same (absent) seed: concurrent episodes of one task must not share an agent
    factory = FakeFactory()
    brain = AgentBrain(factory)
    start = [{"role": "user", "content": "Begin."}]
    try:
        a, b = brain(request(None, start)), brain(request(None, start))
    finally:
        brain.close()
    assert len(factory.agents) == 2
    assert a.tool_calls[0].id != b.tool_calls[0].id


# -- the command line ----------------------------------------------------------------------------


def run_cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jeval_ray.testserver", *args], capture_output=True, text=True, timeout=timeout)


def test_cli_refuses_a_public_host():
    public = run_cli("--host", "0.0.0.0")
    assert public.returncode == 2 and "loopback" in public.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--brain", "oracle"], "--brain"),
        (["--brain", "builtin:"], "--brain"),
        (["--brain", "builtin:no-such-agent"], "unknown built-in agent"),
        (["--faults", "explode:1"], "unknown fault"),
    ],
)
def test_cli_refuses_bad_options_with_exit_code_2(capsys, args, message):
    assert main(["--port", "0", *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_serves_until_terminated():
    proc = subprocess.Popen(
        [sys.executable, "-m", "jeval_ray.testserver", "--port", "0", "--faults", "server_error*1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = proc.stdout.readline()
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
        assert httpx.post(f"{url}/chat/completions", json=body).status_code == 503
        assert httpx.post(f"{url}/chat/completions", json=body).json()["choices"][0]["message"]["tool_calls"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
