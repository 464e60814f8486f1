"""The response cache: keys, hits that cost nothing, corrupt entries, the CLI, and a sweep that pays nothing twice
(a worker lost between two calls, a new run over a finished grid), against the test server's request log."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import tiny_config

from jeval_ray.cache import ResponseCache, cache_key
from jeval_ray.cache.__main__ import main as cache_cli
from jeval_ray.models import ModelConfig, TokenBucketLimiter, make_client
from jeval_ray.store import read_dataset, read_raw
from jeval_ray.sweep import run_sweep, validate_config
from jeval_ray.testserver import LocalModelServer, builtin_brain

MESSAGES = [{"role": "system", "content": "You audit."}, {"role": "user", "content": "Begin."}]
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}


def _cfg(server: LocalModelServer, **over) -> ModelConfig:
    return ModelConfig(**{"name": "m", "model": "m", "base_url": server.url, "max_attempts": 2, "timeout_s": 5,
                          "price": PRICE, **over})


def _call(cfg: ModelConfig, cache: ResponseCache, seed: int = 7, limiter=None, sample_index: int = 0):
    async def go():
        client = make_client(cfg, cache=cache, limiter=limiter, sample_index=sample_index)
        try:
            return await client.chat(MESSAGES, None, seed=seed)
        finally:
            await client.aclose()
    return asyncio.run(go())


def test_the_key_covers_the_request_seed_and_sample_but_not_cache_markers():
    body = {"model": "m", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 100}
    base = cache_key("openai", "http://h/v1", body, 1)
    marked = {**body, "messages": [{**MESSAGES[0], "cache_control": {"type": "ephemeral"}}, MESSAGES[1]]}
    assert cache_key("openai", "http://h/v1", marked, 1) == base
    assert cache_key("openai", "http://h/v1", dict(reversed(body.items())), 1) == base  # canonical JSON
    others = [cache_key("openai", "http://h/v1", body, 2), cache_key("openai", "http://h/v1", body, 1, sample_index=1),
              cache_key("anthropic", "http://h/v1", body, 1), cache_key("openai", "http://g/v1", body, 1),
              cache_key("openai", "http://h/v1", {**body, "temperature": 0.7}, 1),
              cache_key("openai", "http://h/v1", {**body, "max_tokens": 99}, 1),
              cache_key("openai", "http://h/v1", {**body, "reasoning_effort": "low"}, 1)]
    assert len({base, *others}) == 1 + len(others)


def test_a_hit_sends_nothing_passes_no_limiter_costs_nothing_and_keeps_its_token_counts(tmp_path):
    cache = ResponseCache(str(tmp_path / "cache"))
    limiter = TokenBucketLimiter(rpm=1000)
    with LocalModelServer() as srv:
        first = _call(_cfg(srv), cache, limiter=limiter)
        again = _call(_cfg(srv), cache, limiter=limiter)
        other_seed = _call(_cfg(srv, send_seed=False), cache, seed=8)  # the logical seed keys even when not sent
        resample = _call(_cfg(srv), cache, sample_index=1)
        log = srv.requests
    assert len(log) == 3 and limiter.granted == 1
    assert (first.cache_hit, again.cache_hit, other_seed.cache_hit, resample.cache_hit) == (False, True, False, False)
    assert again.cost_usd == 0.0 and first.cost_usd > 0 and again.attempts == 0
    assert (again.tokens_in, again.tokens_out, again.text) == (first.tokens_in, first.tokens_out, first.text)
    assert cache.stats()["writes"] == 3


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_key", "empty"])
def test_a_corrupt_or_partial_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    cache = ResponseCache(str(tmp_path / "cache"))
    with LocalModelServer() as srv:
        _call(_cfg(srv), cache)
        (entry,) = [p for p in (tmp_path / "cache").rglob("*.json")]
        text = entry.read_text()
        entry.write_text({"garbage": "\x00not json", "truncated": text[: len(text) // 2], "empty": "",
                          "other_key": text.replace(entry.stem, "0" * 64)}[damage])
        # a writer that died mid-write leaves only a hidden temp file: never read as an entry
        (entry.parent / f".{entry.name}.dead.tmp").write_text(text[:10])
        result = _call(_cfg(srv), cache)
        assert len(srv.requests) == 2 and not result.cache_hit and cache.corrupt == 1
        assert _call(_cfg(srv), cache).cache_hit and len(srv.requests) == 2  # rewritten whole


def test_the_cache_cli_lists_and_prunes(tmp_path, capsys):
    root = str(tmp_path / "cache")
    cache = ResponseCache(root)
    with LocalModelServer() as srv:
        _call(_cfg(srv), cache, seed=1)
        _call(_cfg(srv), cache, seed=2)
    bad = next((tmp_path / "cache").rglob("*.json"))
    bad.write_text("{")
    assert cache_cli(["list", root, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(e["ok"] for e in listed) == [False, True] and {e["model"] for e in listed if e["ok"]} == {"m"}
    assert cache_cli(["prune", root]) == 0
    assert json.loads(capsys.readouterr().out) == {"deleted": 0, "corrupt": 1, "tmp": 0, "kept": 1}
    assert cache_cli(["prune", root, "--older-than", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == 1 and not list((tmp_path / "cache").rglob("*.json"))
    assert cache_cli(["prune", root, "--older-than", "-1"]) == 2


# ------------------------------------------------------------------------------------------------ a sweep
CALLS_BEFORE_CRASH = 3


@pytest.fixture(scope="module")
def cached_sweeps(ray_local, tmp_path_factory):
    """One episode whose worker dies after 3 model calls (replayed from the cache on attempt 2), then a
    new run over the finished grid."""
    tmp = tmp_path_factory.mktemp("cached")
    with LocalModelServer(builtin_brain("careful")) as server:
        model = {"name": "careful-openai", "provider": "openai", "model": "careful", "base_url": server.url,
                 "max_observation_chars": 1_000_000, "context_window": 10_000_000, "timeout_s": 10,
                 "price": PRICE, "agent_options": {"crash_after_calls": CALLS_BEFORE_CRASH}}
        cfg = validate_config(tiny_config(tmp, models=[model], seeds=[0], allow_test_agents=True,
                                          execution={"response_cache": str(tmp / "cache"), "max_attempts": 2}))
        first = run_sweep(cfg)
        first_log = server.requests
        server.clear_log()
        second = run_sweep(cfg)  # a new run id over the finished grid
        second_log = server.requests
    return {"first": first, "second": second, "first_log": first_log, "second_log": second_log}


def test_a_worker_lost_after_k_calls_leaves_each_distinct_request_sent_once(cached_sweeps):
    r = cached_sweeps["first"]
    assert (r.done, r.failed, r.retried) == (1, 0, 1)
    (ep,) = read_dataset(r.run_dir, "episodes").to_pylist()
    assert ep["status"] == "completed" and ep["attempt"] == 2 and ep["termination"] == "submitted"
    sent = Counter(q.body_hash for q in cached_sweeps["first_log"])
    assert sent and set(sent.values()) == {1}  # nothing sent twice, the calls before the crash included
    assert ep["cache_hits"] == CALLS_BEFORE_CRASH
    steps = [s for s in read_raw(r.run_dir, "steps").to_pylist() if s["attempt"] == 2]
    replies = [s for s in sorted(steps, key=lambda s: s["step_idx"]) if s["tokens_in"]]
    assert [s["cache_hit"] for s in replies[:CALLS_BEFORE_CRASH + 1]] == [True] * CALLS_BEFORE_CRASH + [False]
    assert len(sent) == len(replies)  # every reply of the episode was sent exactly once, across both attempts


def test_a_new_run_over_a_finished_grid_makes_no_endpoint_call_and_costs_nothing(cached_sweeps):
    r, first = cached_sweeps["second"], cached_sweeps["first"]
    assert cached_sweeps["second_log"] == [] and r.run_dir != first.run_dir and (r.done, r.failed) == (1, 0)
    (ep,) = read_dataset(r.run_dir, "episodes").to_pylist()
    (before,) = read_dataset(first.run_dir, "episodes").to_pylist()
    assert ep["cost_usd"] == 0.0 and ep["cache_hits"] == ep["n_steps"] - _extra_calls(r.run_dir)
    assert (ep["tokens_in"], ep["tokens_out"], ep["score"]) == (before["tokens_in"], before["tokens_out"], before["score"])
    assert (ep["tp"], ep["fp"], ep["outcome"]) == (before["tp"], before["fp"], before["outcome"])


def _extra_calls(run_dir: str) -> int:
    """Steps that were a reply's second or later tool call (a reply's hit is counted once)."""
    return sum(1 for s in read_dataset(run_dir, "steps").to_pylist() if s["tokens_in"] == 0)


def test_the_cli_takes_cache_and_refuses_an_unusable_one(tmp_path):
    from conftest import run_cli

    blocker = tmp_path / "file"
    blocker.write_text("x")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(tiny_config(tmp_path)))
    res = run_cli("--config", str(cfg), "--cache", str(blocker / "sub"), "--dry-run")
    assert res.returncode == 2 and "--cache" in res.stderr and "Fix:" in res.stderr
    ok = run_cli("--config", str(cfg), "--cache", "rel-cache", "--dry-run", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert not (tmp_path / "rel-cache").exists()  # a dry run opens the location but writes nothing
