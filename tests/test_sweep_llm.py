"""Sweeps whose models are HTTP endpoints: the local test server over real loopback HTTP, real Ray.

The local server plays the built-in ``careful`` agent through the OpenAI and Anthropic protocols,
so a sweep through it must decide exactly what the in-process ``careful`` decides. Around that:
transient faults are survived, dead endpoints end as ``failed`` rows within bounded retries, the
API key never reaches any file or log line, and tokens, latency and cost reach the records.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import run_cli, tiny_config

from jeval_ray.errors import ConfigError
from jeval_ray.store import read_dataset
from jeval_ray.sweep import run_sweep, validate_config
from jeval_ray.testserver import Faults, LocalModelServer, builtin_brain

TASKS = ["JE-1", "JE-2"]
SEEDS = [0, 1]
#: Built-in brains parse whole JSON observations: nothing may be truncated or overflow.
WHOLE = {"max_observation_chars": 1_000_000, "context_window": 10_000_000}
PRICE = {"input_per_mtok": 2.5, "output_per_mtok": 10.0}
#: Fast, bounded retries for tests (a call ends within max_attempts * timeout_s + max_total_wait_s).
FAST_RETRY = {"timeout_s": 10, "backoff_base_s": 0.02, "backoff_max_s": 0.2}
CAREFUL = {"name": "careful", "provider": "builtin", "agent": "careful"}


def _endpoint(name: str, url: str, provider: str = "openai", **over) -> dict:
    return {"name": name, "provider": provider, "model": f"{name}-model", "base_url": url, **WHOLE, **FAST_RETRY, **over}


def _sweep(tmp_path: Path, models: list[dict], tasks=TASKS, seeds=SEEDS, **over):
    cfg = validate_config(tiny_config(tmp_path, tasks=tasks, models=models, seeds=list(seeds), **over))
    return run_sweep(cfg)


def _dispositions(run_dir: str, model: str) -> dict[tuple[str, int], list[tuple]]:
    """(task, seed) -> the ordered (entry_id, decision, criteria, evidence) of ``model``'s episodes."""
    out: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    for d in read_dataset(run_dir, "dispositions").to_pylist():
        if d["model"] == model:
            out[(d["task_id"], d["seed"])].append((d["entry_id"], d["decision"], d["criteria"], tuple(d["evidence"] or ())))
    return dict(out)


def _episodes(run_dir: str, model: str) -> list[dict]:
    return [e for e in read_dataset(run_dir, "episodes").to_pylist() if e["model"] == model]


# ------------------------------------------------------------------------------------------------
# One sweep: careful in-process and careful behind the OpenAI route, same grid.
@pytest.fixture(scope="module")
def http_sweep(ray_local, tmp_path_factory):
    with LocalModelServer(builtin_brain("careful")) as server:
        models = [CAREFUL, _endpoint("careful-openai", server.url, price=PRICE)]
        result = _sweep(tmp_path_factory.mktemp("http_sweep"), models)
        requests = server.requests
    return {"result": result, "run_dir": result.run_dir, "requests": requests}


ANTHROPIC_SEED = 1


@pytest.fixture(scope="module")
def anthropic_sweep(ray_local, tmp_path_factory):
    """careful behind the Anthropic route: one seed, so each concurrent episode has its own brief.

    The Messages API carries no seed and a task's brief does not depend on the seed, so the test
    server (which tells conversations apart by model, system prompt and seed) would mix up two
    concurrent episodes of one task (see the report on ``testserver/_brains.py``).
    """
    with LocalModelServer(builtin_brain("careful")) as server:
        model = _endpoint("careful-anthropic", server.url, provider="anthropic", price=PRICE)
        result = _sweep(tmp_path_factory.mktemp("anthropic_sweep"), [model], seeds=[ANTHROPIC_SEED])
        requests = server.requests
    return {"result": result, "run_dir": result.run_dir, "requests": requests}


def test_every_episode_of_the_http_sweeps_completes(http_sweep, anthropic_sweep):
    r = http_sweep["result"]
    assert (r.total, r.done, r.failed) == (2 * len(TASKS) * len(SEEDS), r.total, 0)
    r = anthropic_sweep["result"]
    assert (r.total, r.done, r.failed) == (len(TASKS), r.total, 0)


def test_the_openai_route_makes_the_same_dispositions_as_the_builtin_agent(http_sweep):
    reference = _dispositions(http_sweep["run_dir"], "careful")
    assert set(reference) == {(t, s) for t in TASKS for s in SEEDS} and all(reference.values())
    assert _dispositions(http_sweep["run_dir"], "careful-openai") == reference


def test_the_anthropic_route_makes_the_same_dispositions_as_the_builtin_agent(http_sweep, anthropic_sweep):
    reference = {k: v for k, v in _dispositions(http_sweep["run_dir"], "careful").items() if k[1] == ANTHROPIC_SEED}
    assert len(reference) == len(TASKS)
    assert _dispositions(anthropic_sweep["run_dir"], "careful-anthropic") == reference


def test_every_llm_turn_is_one_http_request_on_its_providers_route(http_sweep, anthropic_sweep):
    for sweep, model, path in ((http_sweep, "careful-openai", "/v1/chat/completions"),
                               (anthropic_sweep, "careful-anthropic", "/v1/messages")):
        steps = read_dataset(sweep["run_dir"], "steps").to_pylist()
        turns = [s for s in steps if s["model"] == model and s["latency_ms"] and s["latency_ms"] > 0]
        requests = [q for q in sweep["requests"] if q.path == path]
        assert len(turns) == len(requests) > 0 and {q.status for q in requests} == {200}


def test_the_sweep_seed_is_forwarded_to_the_openai_route_and_not_to_anthropic(http_sweep, anthropic_sweep):
    assert {q.seed for q in http_sweep["requests"]} == set(SEEDS)
    assert {q.seed for q in anthropic_sweep["requests"]} == {None}  # the Messages API has no seed


def test_llm_episode_rows_carry_tokens_and_the_cost_of_the_price_table(http_sweep, anthropic_sweep):
    for sweep, model in ((http_sweep, "careful-openai"), (anthropic_sweep, "careful-anthropic")):
        for e in _episodes(sweep["run_dir"], model):
            assert e["tokens_in"] > 0 and e["tokens_out"] > 0
            expected = (e["tokens_in"] * PRICE["input_per_mtok"] + e["tokens_out"] * PRICE["output_per_mtok"]) / 1e6
            assert e["cost_usd"] > 0 and e["cost_usd"] == pytest.approx(expected)
    # a built-in agent uses no model: its tokens do not exist (null), its cost is 0
    assert all((e["tokens_in"], e["tokens_out"], e["cost_usd"]) == (None, None, 0.0)
               for e in _episodes(http_sweep["run_dir"], "careful"))


def test_llm_step_rows_carry_tokens_and_latency_that_sum_to_the_episode(http_sweep):
    steps = read_dataset(http_sweep["run_dir"], "steps").to_pylist()
    for e in _episodes(http_sweep["run_dir"], "careful-openai"):
        mine = [s for s in steps if s["episode_id"] == e["episode_id"]]
        turns = [s for s in mine if s["tokens_in"]]
        assert turns and all(s["tokens_out"] > 0 and s["latency_ms"] > 0 for s in turns)
        assert sum(s["tokens_in"] for s in mine) == e["tokens_in"]
        assert sum(s["tokens_out"] for s in mine) == e["tokens_out"]


# ------------------------------------------------------------------------------------------------
def test_transient_429_5xx_and_dropped_connections_are_survived_by_every_episode(http_sweep, tmp_path):
    faults = Faults(probabilities={"rate_limit": 0.08, "server_error": 0.08, "drop": 0.08, "malformed_json": 0.04},
                    retry_after_s=0.1, seed=5)
    with LocalModelServer(builtin_brain("careful"), faults) as server:
        # max_concurrency gives the endpoint its cluster-wide RateLimiter actor (shared 429 pauses)
        model = _endpoint("careful-flaky", server.url, max_attempts=12, max_total_wait_s=30, max_concurrency=8)
        r = _sweep(tmp_path, [model], tasks=["JE-2"])
        requests = server.requests
    assert (r.done, r.failed) == (len(SEEDS), 0)
    assert {"rate_limit", "server_error", "drop", "malformed_json"} <= {q.fault for q in requests}
    reference = {k: v for k, v in _dispositions(http_sweep["run_dir"], "careful").items() if k[0] == "JE-2"}
    assert _dispositions(r.run_dir, "careful-flaky") == reference


def test_no_request_reaches_the_endpoint_before_the_retry_after_it_announced(ray_local, tmp_path):
    faults = Faults(probabilities={"rate_limit": 0.1}, retry_after_s=1.0, seed=3)
    with LocalModelServer(builtin_brain("careful"), faults) as server:
        # every episode's client shares the endpoint's RateLimiter actor, which pauses them all on a 429
        model = _endpoint("careful-429", server.url, max_attempts=12, max_total_wait_s=30, max_concurrency=4)
        r = _sweep(tmp_path, [model], tasks=["JE-2"])
        assert (r.done, r.failed) == (len(SEEDS), 0)
        assert any(q.status == 429 for q in server.requests)
        # Requests the shared limiter granted before it heard of the 429 are already on their way:
        # the first 0.4 s of each pause forgives them (one Ray actor call plus sending; 9-39 ms
        # with both cores busy, over 150 ms once when the suite ran on two workers). The remaining
        # 0.6 s of every pause must see no request at all.
        assert server.retry_after_violations(slack_s=0.4) == []


@pytest.fixture(scope="module")
def failing_sweep(ray_local, tmp_path_factory):
    bounded = {"max_attempts": 3, "max_total_wait_s": 2.0, "timeout_s": 5}
    with LocalModelServer(faults=Faults(probabilities={"server_error": 1.0})) as down, \
            LocalModelServer(faults=Faults(probabilities={"unauthorized": 1.0})) as denied:
        models = [_endpoint("always-503", down.url, **bounded), _endpoint("always-401", denied.url, **bounded)]
        t0 = time.monotonic()
        result = _sweep(tmp_path_factory.mktemp("failing"), models, tasks=["JE-1"])
        elapsed = time.monotonic() - t0
        requests = {"always-503": down.requests, "always-401": denied.requests}
    return {"result": result, "elapsed": elapsed, "requests": requests}


def test_an_endpoint_that_always_answers_5xx_ends_each_episode_as_a_failed_row_after_bounded_attempts(failing_sweep):
    r = failing_sweep["result"]
    assert r.total == r.failed == 2 * len(SEEDS) and r.done == 0
    assert failing_sweep["elapsed"] < 60  # bounded: no hang
    rows = _episodes(r.run_dir, "always-503")
    assert len(rows) == len(SEEDS)
    for e in rows:
        assert e["status"] == "failed" and e["termination"].startswith("model_error: ServerError")
        assert "HTTP 503" in e["error"] and "after 3 attempts" in e["error"] and "max_attempts=3" in e["error"]
    assert len(failing_sweep["requests"]["always-503"]) == 3 * len(SEEDS)  # exactly max_attempts per episode


def test_an_endpoint_that_answers_401_fails_each_episode_at_once_with_a_clear_error(failing_sweep):
    rows = _episodes(failing_sweep["result"].run_dir, "always-401")
    assert len(rows) == len(SEEDS)
    for e in rows:
        assert e["status"] == "failed" and e["termination"].startswith("model_error: ClientRequestError")
        assert "HTTP 401" in e["error"] and "Incorrect API key" in e["error"]
    assert len(failing_sweep["requests"]["always-401"]) == len(SEEDS)  # never retried


# ------------------------------------------------------------------------------------------------
KEY_ENV = "JEVAL_TEST_SWEEP_LLM_KEY"
SECRET = "jeval-test-key-Zq7Xw2Rk9Pm4Lt8Vn3Hs"


def _files_containing(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` whose bytes, or (Parquet) decoded values, contain ``needle``."""
    hits = []
    for f in root.rglob("*"):
        if not f.is_file() or f.is_symlink():
            continue
        try:
            data = f.read_bytes()
        except OSError:  # a socket or a file that vanished
            continue
        if needle in data:
            hits.append(str(f))
        elif f.suffix == ".parquet":  # compressed pages could hide it from a byte search
            text = json.dumps(pq.read_table(f).to_pylist(), default=str)
            if needle.decode() in text:
                hits.append(f"{f} (decoded)")
    return hits


def test_the_api_key_appears_in_no_output_file_and_no_log_line(tmp_path):
    assert SECRET not in os.environ.values()
    # A short private Ray temp dir: the sweep's own Ray session logs are searched too.
    ray_tmp = Path(tempfile.mkdtemp(prefix="jr", dir="/tmp"))
    faults = Faults(probabilities={"rate_limit": 0.1}, retry_after_s=0.1, seed=1)
    faults.queue("unauthorized", 1)  # the first request gets a 401 that echoes the key it was sent
    try:
        with LocalModelServer(builtin_brain("careful"), faults, api_key=SECRET) as server:
            model = _endpoint("keyed", server.url, api_key_env=KEY_ENV, max_attempts=12, max_total_wait_s=30)
            cfg = tiny_config(tmp_path, models=[model], ray={"log_to_driver": True})
            path = tmp_path / "sweep.yaml"
            path.write_text(yaml.safe_dump(cfg))
            out = run_cli("--config", str(path), "--out", str(tmp_path / "out"), "--plain", timeout=240,
                          env={KEY_ENV: SECRET, "RAY_TMPDIR": str(ray_tmp)})
            requests = server.requests
        assert out.returncode == 0, out.stderr[-3000:]
        assert [q.status for q in requests].count(401) == 1  # the echo really happened
        assert sum(q.status == 200 for q in requests) > 0  # and the key really was sent and accepted
        (run_dir,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
        eps = read_dataset(str(run_dir), "episodes").to_pylist()
        assert sorted(e["status"] for e in eps) == ["completed", "failed"]
        assert "[REDACTED]" in next(e["error"] for e in eps if e["status"] == "failed")
        assert (run_dir / "manifest.json").is_file()
        needle = SECRET.encode()
        assert needle not in out.stdout.encode() and needle not in out.stderr.encode()
        assert _files_containing(run_dir, needle) == []
        assert _files_containing(ray_tmp, needle) == []
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_a_config_naming_an_unset_key_variable_exits_2_naming_the_variable(tmp_path):
    missing = "JEVAL_TEST_UNSET_KEY_VAR"
    assert missing not in os.environ
    cfg = tiny_config(tmp_path, models=[_endpoint("keyed", "http://127.0.0.1:9/v1", api_key_env=missing)])
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_cli("--config", str(path), "--out", str(tmp_path / "out"))
    assert out.returncode == 2 and missing in out.stderr and "api_key_env" in out.stderr
    assert not (tmp_path / "out").exists()


def test_validating_a_config_naming_an_unset_key_variable_raises_config_error(tmp_path):
    missing = "JEVAL_TEST_UNSET_KEY_VAR"
    cfg = tiny_config(tmp_path, models=[_endpoint("keyed", "http://127.0.0.1:9/v1", api_key_env=missing)])
    with pytest.raises(ConfigError, match=missing):
        validate_config(cfg)
