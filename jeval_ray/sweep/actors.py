"""Ray actors of the sweep: ``EpisodeWorker`` (plays episodes) and ``JudgeWorker`` (judges them).

Both are async actors: one process hosts many concurrent coroutines. An ``EpisodeWorker`` runs up
to ``episodes_per_worker`` episodes at once, each with its own ``JEEnv`` and ``Agent`` (no state
is shared between episodes, and none survives a restart: the driver owns every retry). Neither
actor ever calls blocking ``ray.get``/``ray.wait``; refs are awaited.

Errors inside an episode (a bug, a bad knob combination) come back as a ``failed`` result and are
written as a failed row at once: they would fail again. Only the death of the worker process is
retried, by the driver, on another worker.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import pickle
import traceback

import pyarrow as pa
import ray

from jeval_ray.records import DISPOSITIONS, STEPS, EpisodeKeys, dispositions_rows, episode_row, steps_rows, table_to_ipc
from jeval_ray.world import WorldCache


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _warm_up_episode() -> None:
    """Pay a worker process's one-off costs before it reports ready: the episode modules' imports and a
    first tiny reset (pyarrow imports pandas on its first conversion of a Python list, and the
    calendar and tool schemas are built once per process): about 0.4 s of CPU that would otherwise
    be charged to the wall time of the first episodes dispatched to this worker."""
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode  # noqa: F401
    from jeval_ray.sweep.agents import make_model_agent  # noqa: F401

    JEEnv("JE-1", {"n_entries": 40, "n_defects": 1, "n_decoys": 1, "noise_documents": 0}).reset(seed=0)


class EpisodeWorker:
    """Hosts several isolated episodes at once (an async actor)."""

    def __init__(self, models: dict[str, dict], keep_observations: bool = True, world_cache: int = 0,
                 plays: int | None = None, world_cache_entries: int = 1_000_000, response_cache: str | None = None):
        self.models = models
        self.response_cache = response_cache
        self.keep_observations = keep_observations
        # worlds shared by the next cells of the same (task, seed, knobs): other models, other conditions
        self.worlds = WorldCache(world_cache, world_cache_entries)
        self.label = f"{ray.get_runtime_context().get_node_id()[:8]}:{os.getpid()}"
        # ``plays``: episodes played at once; the driver may send more (execution.queue_per_worker),
        # which wait here and start the moment a playing one ends. While they wait, the worker builds
        # their worlds in its idle time (``_build_ahead``), so they start without generating one.
        self.gate = asyncio.Semaphore(plays) if plays else None
        self.waiting: dict[str, dict] = {}  # episode_id -> job, queued in arrival order
        self.built: dict[str, tuple | None] = {}  # episode_id -> (world, reused) built ahead (None: failed)
        self.builder: asyncio.Task | None = None
        _warm_up_episode()

    async def ready(self) -> dict:
        return {"label": self.label, "pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(),
                "world_cache": {"worlds": self.worlds.capacity, "entries": self.worlds.max_entries}}

    async def run_many(self, jobs: list[dict]) -> tuple[dict, list]:
        """Play several episodes (concurrently); returns ``(batch, packets)``: two Ray objects.

        ``batch`` holds one result dict per job (pickled together) plus the steps and dispositions
        of every episode as one Arrow IPC buffer per dataset (each result names its rows'
        ``(offset, length)``);
        ``packets`` holds each episode's judge packet (None when there is nothing to judge). The
        driver calls this with ``num_returns=2`` and hands the packets' ref straight to the judge
        pool, so a packet (with the text of every cited document) never passes through it. One
        call, two objects and two buffers per batch amortise Ray's per-call and per-object costs
        over CPU-bound episodes.
        """
        outs = await asyncio.gather(*(self.run(job) for job in jobs))
        steps: list[dict] = []
        disps: list[dict] = []
        results = []
        for result, _packet, rows in outs:
            if rows is not None:
                result["steps_rows"] = (len(steps), len(rows[0]))
                result["dispositions_rows"] = (len(disps), len(rows[1]))
                steps += rows[0]
                disps += rows[1]
            results.append(result)
        # The result dicts hold datetimes, which Ray's msgpack path would pickle one by one through a
        # Python callback; one pickle of the whole list is several times cheaper on both ends.
        batch = {"results": pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL),
                 "steps": table_to_ipc(pa.Table.from_pylist(steps, schema=STEPS)) if steps else None,
                 "dispositions": table_to_ipc(pa.Table.from_pylist(disps, schema=DISPOSITIONS)) if disps else None}
        return batch, [p for _, p, _ in outs]

    async def run(self, job: dict) -> tuple[dict, dict | None, tuple[list, list] | None]:
        """Play one episode (once the gate lets it: see ``__init__``); returns (its result, its judge
        packet or None, its (steps, dispositions) rows)."""
        if self.gate is None:
            return await self._play(job, None)
        eid = job["episode_id"]
        if self.gate.locked():
            self.waiting[eid] = job
            if self.builder is None or self.builder.done():
                self.builder = asyncio.get_running_loop().create_task(self._build_ahead())
        try:
            async with self.gate:
                self.waiting.pop(eid, None)
                return await self._play(job, self.built.pop(eid, None))
        finally:
            self.waiting.pop(eid, None)
            self.built.pop(eid, None)

    async def _build_ahead(self) -> None:
        """Build the worlds of waiting jobs, oldest first, one per turn of the event loop (episodes'
        timers and tool calls run in between). A job that starts first is skipped; a world that fails
        to build is left to its episode, which reports the error."""
        from jeval_ray.env import JEEnv

        while True:
            eid = next((e for e in self.waiting if e not in self.built), None)
            if eid is None:
                return
            job = self.waiting[eid]
            try:
                env = JEEnv(job["task_id"], job["knobs"], tuple(job["tools_withheld"]), step_budget=job["step_budget"])
                self.built[eid] = self.worlds.fetch(env.spec.id, job["seed"], env.knobs.model_dump())
            except Exception:  # noqa: BLE001 - the episode builds it again and records the error
                self.built[eid] = None
            await asyncio.sleep(0)

    async def _play(self, job: dict, built: tuple | None) -> tuple[dict, dict | None, tuple[list, list] | None]:
        from jeval_ray.env import JEEnv
        from jeval_ray.episode import play_episode
        from jeval_ray.sweep.agents import agent_label, make_model_agent

        keys = EpisodeKeys(job["run_id"], job["episode_id"], job["attempt"], job["task_id"], job["model"], job["seed"],
                           job["condition"])
        entry = self.models[job["model"]]
        started = _now()
        try:
            env = JEEnv(job["task_id"], job["knobs"], tuple(job["tools_withheld"]), step_budget=job["step_budget"],
                        keep_observations=self.keep_observations)
            agent = make_model_agent(entry, job["seed"], attempt=job["attempt"], response_cache=self.response_cache)
            outcome = await play_episode(env, agent, job["seed"], timeout_s=job.get("timeout_s"), worlds=self.worlds,
                                         world=built)
        except Exception as exc:  # noqa: BLE001 - recorded as a failed episode with its traceback
            err = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"[:8000]
            return {"status": "error", "error": err, "worker": self.label}, None, None
        row = episode_row(keys, outcome, agent=agent_label(entry), tier=job["tier"], run_config_json=job["contract_json"],
                          judge_agg={}, final_score=None, worker=self.label, started_at=started, finished_at=_now())
        judged = outcome.status == "completed"
        rows = (steps_rows(keys, outcome, keep_observations=self.keep_observations), dispositions_rows(keys, outcome))
        return ({"status": "ok", "row": row, "judge": judged, "worker": self.label, "world_reused": outcome.world_reused,
                 "world_ahead": built is not None and not built[1]},
                outcome.judge_packet if judged else None, rows)


class JudgeWorker:
    """The judge pool's actor: applies a judge (function or LLM judge model) to a judge packet.

    ``judging`` (``ScoringConfig.judging()``) names the LLM judge models; their clients are built on
    first use and kept for the worker's life (one connection pool per judge model), and share each
    endpoint's cluster-wide rate limiter with the agents calling it.
    """

    def __init__(self, judging: dict | None = None):
        self.label = f"{ray.get_runtime_context().get_node_id()[:8]}:{os.getpid()}"
        from jeval_ray.sweep.judges import JudgePanel  # imported before ``ready``, not on the first batch

        self.panel = JudgePanel(judging or {})

    async def ready(self) -> dict:
        return {"label": self.label}

    async def judge(self, packet: dict, judge: str, rubric: str, idx: int, seed: int) -> dict:
        """One judgment, as its ``judgments`` row fields (``Judgment.as_record``): validated here, once."""
        j = await self.panel.judge(judge, packet, rubric=rubric, idx=idx, seed=seed)
        return j.as_record()

    async def judge_many(self, items: list[tuple]) -> list[dict]:
        """Judge several ``(packets_ref, position, judge, rubric, idx, seed)`` items.

        ``packets_ref`` is the packets object of an episode batch (see ``EpisodeWorker.run_many``);
        each distinct ref is awaited once, however many of its packets are judged here.
        """
        refs = list(dict.fromkeys(item[0] for item in items))
        fetched = dict(zip(refs, await asyncio.gather(*refs, return_exceptions=True)))

        async def one(item) -> dict:
            packets = fetched[item[0]]
            if isinstance(packets, BaseException):  # e.g. lost with its node: not the judge's fault
                return {"__lost__": f"judge packet lost: {type(packets).__name__}: {packets}"[:2000]}
            return await self.judge(packets[item[1]], *item[2:])

        return list(await asyncio.gather(*(one(item) for item in items)))


def episode_worker_class(cpus: float, resources: dict, concurrency: int, scheduling: str):
    """``EpisodeWorker`` as a Ray actor class with explicit resources; the driver owns restarts."""
    opts = dict(num_cpus=cpus, max_concurrency=concurrency + 4, max_restarts=0, max_task_retries=0)
    if resources:
        opts["resources"] = dict(resources)
    if scheduling == "spread":
        opts["scheduling_strategy"] = "SPREAD"
    return ray.remote(EpisodeWorker).options(**opts)


def judge_worker_class(cpus: float, resources: dict, concurrency: int):
    opts = dict(num_cpus=cpus, max_concurrency=concurrency + 4, max_restarts=0, max_task_retries=0)
    if resources:
        opts["resources"] = dict(resources)
    return ray.remote(JudgeWorker).options(**opts)


__all__ = ["EpisodeWorker", "JudgeWorker", "episode_worker_class", "judge_worker_class"]
