"""The sweep driver: plan (validate, no side effects) then run (Ray actors, pipelined judging, Parquet).

``plan_run`` resolves the output location and the run id and checks everything that can be
checked without writing or starting Ray; any problem is a ``ConfigError`` (CLI exit code 2).
``run_sweep`` then owns one scheduling loop built on ``ray.wait``:

- cells of the grid are dispatched lazily to ``EpisodeWorker`` actors: at most ``max_in_flight``
  episodes are being played, and at most as many more wait for their judges (so the driver's
  memory is bounded whatever the grid size, and a slow judge pool throttles dispatch);
- each finished episode's judge packet is sent at once to the ``JudgeWorker`` pool (pipelined);
  when its ``judges_per_episode`` judgments are back, its rows are buffered for the writer;
- a dead worker (``ray.kill``, ``os._exit``, a lost node) is replaced by a new actor and each of
  its in-flight episodes is dispatched again with ``attempt + 1``; the last allowed attempt runs
  alone on an isolation worker, so an episode that kills its worker every time ends as a
  ``failed`` row with its error, and innocent neighbours of such an episode still complete;
- completed episodes found in the output (resume) are skipped; new attempts are numbered above
  every attempt already present in any dataset.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import platform
import re
import socket
import sys
import tempfile
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from jeval_ray import __version__
from jeval_ray.errors import ConfigError, JEvalError
from jeval_ray.records import EpisodeKeys, failed_episode_row, judgment_rows, skipped_episode_row
from jeval_ray.scoring import Judgment, aggregate_judgments, combine
from jeval_ray._fs import exists, has_credentials, is_local, join_uri, list_dir, resolve_fs
from jeval_ray.sweep.agents import agent_label, is_builtin, waits_on_latency
from jeval_ray.sweep.config import SweepConfig
from jeval_ray.sweep.grid import Cell, Grid
from jeval_ray.sweep.judges import assign_judge, judge_seed, jury_id
from jeval_ray.sweep.progress import Progress

MANIFEST = "manifest.json"
MANIFEST_KIND = "jeval_ray.sweep.run"
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
DEDUP_RULE = ("per episode_id keep the completed episodes row with the highest attempt, else the highest attempt; "
              "steps/dispositions/judgments keep the rows of the kept (episode_id, attempt)")


class SweepError(JEvalError):
    """The sweep could not go on (e.g. no episode worker could be scheduled)."""


@dataclass
class RunPlan:
    """Everything resolved before any side effect."""

    cfg: SweepConfig
    grid: Grid
    fs: Any
    root: str
    root_uri: str
    run_id: str
    run_path: str
    resume: bool
    address: str | None
    max_in_flight: int
    out_field: str = "output.root"  # where the output location came from: --out or output.root
    forecast_from: str | None = None  # --forecast-from: an earlier run that calibrates the forecast
    _forecaster: Any = field(default=None, repr=False)

    def forecaster(self):
        """The forecast of this plan's models (``sweep.forecast``), calibrated on ``forecast_from``; made once."""
        if self._forecaster is None:
            from jeval_ray.sweep.forecast import forecaster_for

            self._forecaster = forecaster_for(self.cfg, self.forecast_from)
        return self._forecaster

    @property
    def run_uri(self) -> str:
        return join_uri(self.root_uri, self.run_id)


@dataclass
class SweepResult:
    run_id: str
    run_dir: str
    total: int
    skipped: int
    done: int
    failed: int
    retried: int
    elapsed_s: float
    files: dict[str, int]
    rows: dict[str, int]
    write_seconds: float
    seed_warning: str | None
    worker_replacements: int = 0
    #: cells written as status skipped because a budget (budget_usd, models[].budget_usd) would have been passed
    budget_skipped: int = 0
    #: worlds the episode workers generated, and episodes that took a world generated before (world_cache);
    #: ``ahead``: of the generated, those built while their episode waited in its worker's queue
    worlds: dict = field(default_factory=lambda: {"generated": 0, "reused": 0, "ahead": 0})
    #: warnings found while running (e.g. fewer episodes at once than max_in_flight)
    warnings: list = field(default_factory=list)
    #: monotonic times: first_dispatch, first_judgment, last_episode_result, last_finish
    timeline: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------- plan
def plan_run(cfg: SweepConfig, *, out: str | None = None, run_id: str | None = None, address: str | None = None,
             max_in_flight: int | None = None, filesystem=None, forecast_from: str | None = None) -> RunPlan:
    """Resolve the output and the run id; raises ``ConfigError`` (nothing is written, Ray is not started)."""
    grid = Grid(cfg)
    root_uri = out or cfg.output.root
    field_name = "--out" if out else "output.root"
    if has_credentials(root_uri):  # checked first: no message below may echo them
        raise ConfigError(f"{field_name}: the output URI carries a secret in its user info (key:secret@…); it would be "
                          "written into the manifest and printed. Fix: remove it from the URI and give credentials the "
                          "filesystem's usual way "
                          "(for s3://, the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables).")
    try:
        fs, root = resolve_fs(root_uri, filesystem)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{field_name}: cannot open output location {root_uri!r} ({exc}). "
                          "Fix: use a local path or a pyarrow filesystem URI such as s3://bucket/prefix.") from None
    if "://" not in root_uri:
        if not os.path.isabs(os.path.expanduser(root_uri)) and in_ray_job() and not cfg.output.relative_root_in_ray_job:
            raise ConfigError(f"{field_name}: the output root {root_uri!r} is relative and this sweep runs as a Ray job, "
                              "so the run would land in the job's temporary working directory, which Ray deletes with "
                              "the session. Fix: pass --out with shared storage that outlives the job (s3://bucket/prefix, "
                              "or an absolute path on a filesystem the driver's node keeps, e.g. NFS), or set "
                              "output.relative_root_in_ray_job: true if that temporary directory is what you want.")
        root_uri = root
    if run_id is not None and not RUN_ID_RE.match(run_id):
        raise ConfigError(f"--run-id: {run_id!r} is not a valid run id. Fix: use letters, digits, '.', '_' or '-' "
                          "(at most 128 characters, starting with a letter or digit).")
    run_id = run_id or f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    run_path = f"{root}/{run_id}"
    try:
        root_info = fs.get_file_info(root)
        run_info = fs.get_file_info(run_path)
    except OSError as exc:
        raise ConfigError(f"{field_name}: cannot access {root_uri!r} ({exc}). Fix: check the path and its credentials.") from None
    from pyarrow.fs import FileType

    if root_info.type == FileType.File:
        raise ConfigError(f"{field_name}: {root_uri!r} is a file, not a directory. Fix: choose a directory (or a new path).")
    if is_local(fs):
        _check_local_writable(root, field_name, root_uri)
    resume = False
    if run_info.type == FileType.File:
        raise ConfigError(f"{field_name}: {run_path!r} is a file. Fix: choose another --run-id or --out.")
    if run_info.type == FileType.Directory:
        entries = list_dir(fs, run_path)
        if entries:
            manifest = _read_manifest(fs, run_path)
            if manifest is None or manifest.get("kind") != MANIFEST_KIND:
                raise ConfigError(f"{field_name}: {run_path!r} is not empty and is not a jeval_ray sweep run "
                                  "(no jeval_ray manifest.json). Fix: choose another --out or --run-id.")
            resume = True
            check_world_versions(manifest, [t.id for t in grid.tasks], run_id)
    mif = max_in_flight or cfg.execution.max_in_flight
    if mif < 1:
        raise ConfigError("--max-in-flight: must be >= 1. Fix: pass a positive number.")
    addr = address or os.environ.get("RAY_ADDRESS") or cfg.ray.address
    if addr:
        check_address(addr, "--address" if address else "RAY_ADDRESS" if os.environ.get("RAY_ADDRESS") else "ray.address")
    else:
        check_pools_fit(cfg)
    if forecast_from is not None:
        forecast_from = check_forecast_from(forecast_from)
    plan = RunPlan(cfg=cfg, grid=grid, fs=fs, root=root, root_uri=root_uri, run_id=run_id, run_path=run_path,
                   resume=resume, address=addr, max_in_flight=mif, out_field=field_name, forecast_from=forecast_from)
    if forecast_from is not None or cfg.has_agent_budgets():
        try:  # the profile (and the earlier run) must load before anything starts
            plan.forecaster()
        except (OSError, ValueError, KeyError) as exc:
            where = "--forecast-from" if forecast_from else "budget_usd"
            raise ConfigError(f"{where}: the forecast cannot be made ({type(exc).__name__}: {str(exc)[:300]}). Fix: "
                              "reinstall jeval_ray (its token profile is package data) or give --forecast-from a run "
                              "written by python -m jeval_ray.sweep.") from None
    return plan


def check_forecast_from(path: str) -> str:
    """``--forecast-from``: a run directory with a jeval_ray manifest (``ConfigError`` otherwise)."""
    if "://" not in path:
        path = os.path.abspath(os.path.expanduser(path))
    try:
        fs, where = resolve_fs(path)
        manifest = _read_manifest(fs, where)
    except (OSError, ValueError) as exc:
        manifest, path = None, f"{path} ({exc})"
    if manifest is None or manifest.get("kind") != MANIFEST_KIND:
        raise ConfigError(f"--forecast-from: {path!r} is not a jeval_ray sweep run (no manifest.json of one). "
                          "Fix: give an earlier run's directory, <out>/<run-id>.")
    return path


def in_ray_job() -> bool:
    """True in the driver of a Ray job (``ray job submit``): Ray's job supervisor hands it its job config
    in this environment variable (``ray._private.runtime_env.constants.RAY_JOB_CONFIG_JSON_ENV_VAR``)."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ


def check_address(addr: str, where: str) -> None:
    """Refuse addresses the sweep cannot join, naming where the address came from and what to use."""
    scheme = addr.split("://", 1)[0].lower() if "://" in addr else ""
    if scheme == "ray":
        raise ConfigError(f"{where}: {addr!r} is a Ray Client address; the sweep does not support Ray Client "
                          "(its driver must run on the cluster). Fix: submit the sweep as a Ray "
                          "job (ray job submit ... -- python -m jeval_ray.sweep, cluster/README.md), or run it on a "
                          "node of the cluster with --address auto.")
    if scheme in ("http", "https"):
        raise ConfigError(f"{where}: {addr!r} is the address of Ray's dashboard / job server, which `ray job submit` "
                          "uses, not the cluster's. Fix: for the job CLI set RAY_API_SERVER_ADDRESS instead of "
                          "RAY_ADDRESS; the sweep takes --address auto or the head's GCS address (host:6379).")
    if scheme:
        raise ConfigError(f"{where}: {addr!r} is not a Ray cluster address. Fix: use auto or host:port (the head's "
                          "GCS port, 6379 by default).")


def _local_capacity(cfg: SweepConfig) -> tuple[dict[str, float], str, bool]:
    """The resources a local sweep will have, where that figure comes from, and whether it is a Ray
    this process already runs (else a ``ray.init()`` to come, which has no custom resources)."""
    import ray

    if ray.is_initialized():  # the caller's own ray.init(): its resources are what the pools get
        return ({k: float(v) for k, v in ray.cluster_resources().items()},
                "the Ray instance this process is connected to; for a cluster that grows, pass --address", True)
    if cfg.ray.num_cpus is not None:
        return {"CPU": float(cfg.ray.num_cpus)}, f"ray.num_cpus={cfg.ray.num_cpus}", False
    try:  # what ray.init() will detect (cgroup limits included)
        from ray._private.utils import get_num_cpus

        cpus = float(get_num_cpus())
    except Exception:  # noqa: BLE001 - a Ray without that helper: the OS count
        cpus = float(os.cpu_count() or 1)
    return {"CPU": cpus}, f"this machine's {cpus:g} CPUs (ray.num_cpus unset)", False


def _reserved_cpus(ex) -> float:
    """CPUs held by the judge pool and the isolation workers (what episode workers cannot use)."""
    return ex.judge_workers * ex.judge_worker_cpus + ex.isolation_workers * _SOLO_CPUS


def pool_demand(ex) -> dict[str, float]:
    """Resources the sweep's actor pools hold at once: the episode workers (at least one when
    ``episode_workers`` is auto), the judge workers and the isolation workers."""
    n = 1 if ex.episode_workers == "auto" else int(ex.episode_workers)
    need = {"CPU": n * ex.episode_worker_cpus + _reserved_cpus(ex)}
    for count, res in ((n + ex.isolation_workers, ex.episode_worker_resources), (ex.judge_workers, ex.judge_worker_resources)):
        for k, v in res.items():
            need[k] = need.get(k, 0.0) + count * float(v)
    return need


def check_pools_fit(cfg: SweepConfig) -> None:
    """On a local Ray (fixed resources) refuse pools that cannot all be placed: one left pending would
    hold up the sweep until ``worker_start_timeout_s``. Raises ``ConfigError`` naming the fields."""
    ex = cfg.execution
    have, source, running = _local_capacity(cfg)
    need = pool_demand(ex)
    for res, amount in need.items():
        if amount <= have.get(res, 0.0) + 1e-9:
            continue
        n = "1 (auto, at least)" if ex.episode_workers == "auto" else str(ex.episode_workers)
        if res == "CPU":
            parts = (f"execution.episode_workers={n} x episode_worker_cpus={ex.episode_worker_cpus:g} + "
                     f"judge_workers={ex.judge_workers} x judge_worker_cpus={ex.judge_worker_cpus:g} + "
                     f"isolation_workers={ex.isolation_workers} x {_SOLO_CPUS:g}")
            raise ConfigError(f"execution: the worker pools need {amount:g} CPUs ({parts}) but a local sweep has "
                              f"{have.get('CPU', 0.0):g} ({source}); a pool that cannot be placed would stall the sweep. "
                              "Fix: lower execution.episode_workers or the *_cpus fields, or raise ray.num_cpus.")
        where = source if running else "a local ray.init() provides no custom resources"
        raise ConfigError(f"execution: the worker pools need the custom resource {res!r} ({amount:g}) but a local sweep "
                          f"has {have.get(res, 0.0):g} ({where}). Fix: remove it from execution.episode_worker_resources "
                          "/ judge_worker_resources, or run on a cluster whose nodes provide it (--address).")


def _check_local_writable(root: str, field_name: str, root_uri: str) -> None:
    p = root
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    writable = os.path.isdir(p) and os.access(p, os.W_OK | os.X_OK)
    if writable:
        # permission bits do not bind root (and some filesystems refuse anyway): try it, leave nothing behind
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".jeval-probe-", dir=p))
        except OSError:
            writable = False
    if not writable:
        raise ConfigError(f"{field_name}: output path {root_uri!r} is not writable ({p!r} does not allow writes). "
                          "Fix: choose a writable directory with --out.")


def check_world_versions(manifest: dict, task_ids: list[str], run_id: str) -> None:
    """Refuse to resume a run whose tasks' world versions (``manifest.world_versions``) differ from this
    package's ``WORLD_VERSION``: its finished episodes were played on other worlds (``ConfigError``)."""
    from jeval_ray.world._version import world_versions

    now = world_versions(task_ids)
    fix = (f"Fix: start a new run for the current worlds (another --run-id, or none for a fresh id); run {run_id!r} "
           "keeps its episodes and its report covers its own versions. To analyse episodes of different world "
           "versions together anyway, use python -m jeval_ray.report --allow-mixed.")
    recorded = manifest.get("world_versions")
    if not isinstance(recorded, dict):
        raise ConfigError(f"--run-id: run {run_id!r} was started by a jeval_ray that did not record world versions "
                          f"(its manifest has no world_versions), so its worlds may differ from this version's "
                          f"({', '.join(f'{t} v{v}' for t, v in now.items())}) and resuming could mix them. {fix}")
    changed = {t: (recorded[t], v) for t, v in now.items() if t in recorded and recorded[t] != v}
    if changed:
        raise ConfigError(f"--run-id: run {run_id!r} was played on other world versions than this jeval_ray "
                          f"generates: {', '.join(f'{t} v{a} -> v{b}' for t, (a, b) in changed.items())}; resuming "
                          f"would mix two versions' worlds of {'this task' if len(changed) == 1 else 'these tasks'} "
                          f"in one run. {fix}")


def _read_manifest(fs, run_path: str) -> dict | None:
    path = f"{run_path}/{MANIFEST}"
    if not exists(fs, path):
        return None
    try:
        with fs.open_input_stream(path) as f:
            return json.loads(f.read().decode())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------- ray
def init_ray(plan: RunPlan) -> bool:
    """Connect to (or start) Ray; returns True when this call started/connected it.

    Without an address this is always a new local Ray, even when a cluster runs on this machine
    (``--address auto`` joins that one). Ray's own notice about token authentication is silenced here: ``auth_note`` says in one line
    what, if anything, the user must do. A cluster that cannot be reached (or refuses us for want of
    its token) is a ``ConfigError`` naming the address and the fix.
    """
    import logging

    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    rc = plan.cfg.ray
    auth_log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = auth_log.level
    auth_log.setLevel(logging.ERROR)
    try:
        if plan.address:
            _check_reachable(plan.address)
            ray.init(address=plan.address, log_to_driver=rc.log_to_driver, logging_level="WARNING")
        else:
            # "local": without it ray.init() joins whatever cluster a `ray start` (or a live
            # ray.cluster_utils.Cluster) on this machine last recorded, then refuses our num_cpus.
            ray.init(address="local", num_cpus=rc.num_cpus, include_dashboard=rc.include_dashboard,
                     log_to_driver=rc.log_to_driver,
                     object_store_memory=(rc.object_store_memory_mb << 20) if rc.object_store_memory_mb else None,
                     logging_level="WARNING")
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to join is the same for the user: this address does not work
        if not plan.address:
            raise
        raise ConfigError(_connect_error(plan.address, exc)) from None
    finally:
        auth_log.setLevel(level)
    return True


def _check_reachable(addr: str) -> None:
    """Say at once what ``ray.init`` would say late or vaguely: a host:port nobody listens on makes it
    retry for minutes, and a cluster that wants a token this process lacks becomes a generic
    "Failed to connect" after half a minute. A TCP connect and a GCS client (what ``ray status``
    uses) tell both in milliseconds."""
    if addr == "auto":
        return  # Ray finds the address (and offers the local token) itself
    if ":" in addr:
        host, _, port = addr.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot reach the Ray cluster at {addr} ({exc}). Fix: check that the cluster runs "
                              "(ray status) and that --address / RAY_ADDRESS is its head's GCS address (host:6379), "
                              "or drop --address for a local Ray.") from None
    import ray
    from ray.exceptions import AuthenticationError

    try:
        with _quiet_stderr():  # the C++ client logs its own line about the refusal
            ray._raylet.GcsClient(address=addr)
    except AuthenticationError as exc:
        raise ConfigError(_connect_error(addr, exc)) from None
    except Exception as exc:  # noqa: BLE001 - anything else: ray.init says it, in _connect_error's words
        if "Timed out" in str(exc):  # a port that is open but is no GCS (ray.init would wait much longer)
            raise ConfigError(f"nothing at {addr} answers as a Ray cluster's GCS ({str(exc)[:200]}). Fix: pass the "
                              "head's GCS address (host:6379, as `ray start --head` prints it), not the dashboard's "
                              "or another port.") from None


class _quiet_stderr:
    """Send file descriptor 2 to /dev/null for a moment (C++ logging bypasses ``sys.stderr``)."""

    def __enter__(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)


def _connect_error(addr: str, exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if ("Authentication" in text or "auth" in text.lower() and "token" in text.lower()) and \
            os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return (f"the Ray cluster at {addr} refused this process's token. Fix: give it the cluster's token, in "
                "~/.ray/auth_token, $RAY_AUTH_TOKEN or the file $RAY_AUTH_TOKEN_PATH names (cluster/README.md).")
    if "Authentication" in text or "auth" in text.lower() and "token" in text.lower():
        return (f"the Ray cluster at {addr} requires Ray's token authentication and this process has no token "
                f"(RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE', 'unset')}). Fix: export RAY_AUTH_MODE=token with "
                "the cluster's token in ~/.ray/auth_token, $RAY_AUTH_TOKEN or the file $RAY_AUTH_TOKEN_PATH names "
                "(cluster/README.md).")
    if addr == "auto":
        return ("--address auto: no Ray cluster is running on this machine. Fix: start one (ray start --head), pass "
                "the head's address (host:6379), or drop --address for a local Ray.")
    return (f"cannot join the Ray cluster at {addr} ({text.splitlines()[0][:300]}). Fix: check the address and that "
            "the cluster runs the same Ray and Python versions (ray status).")


def _gcs_address(addr: str) -> str:
    """The address Ray joined (``auto`` resolved), for messages."""
    try:
        import ray

        return ray.get_runtime_context().gcs_address or addr
    except Exception:  # noqa: BLE001 - not connected: the address as given
        return addr


def auth_note(plan: RunPlan) -> tuple[str, bool]:
    """One line on Ray's token authentication for this run, and whether the user must act on it.

    Ray 2.60 turns token authentication on for a Ray that ``ray.init()`` starts (it writes a token to
    ~/.ray/auth_token the first time) and for ``ray start`` when that file exists, unless
    RAY_AUTH_MODE says otherwise; cluster/README.md has the whole story.
    """
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    where = f"the cluster at {_gcs_address(plan.address)}" if plan.address else "this sweep's own local Ray"
    if mode == "token":
        return f"ray: token authentication is on for {where}; nothing to do.", False
    if not plan.address:
        return "ray: token authentication is off (RAY_AUTH_MODE=disabled), fine on a trusted single machine; nothing to do.", False
    return (f"ray: {where} runs without token authentication: anyone who can reach its ports can run code on it. "
            "Nothing to do on a trusted network; elsewhere restart it with a token (cluster/README.md).", True)


def environment_info() -> dict:
    import numpy
    import pyarrow
    import pydantic

    info = {"python": sys.version.split()[0], "platform": platform.platform(), "hostname": socket.gethostname(),
            "pyarrow": pyarrow.__version__, "pydantic": pydantic.__version__, "numpy": numpy.__version__}
    try:
        import ray

        info["ray"] = ray.__version__
        if ray.is_initialized():
            info["ray_cluster_resources"] = ray.cluster_resources()
            info["ray_nodes"] = sum(1 for n in ray.nodes() if n.get("Alive"))
    except Exception:  # noqa: BLE001 - environment info is best effort
        pass
    return info


# ---------------------------------------------------------------------------- driver
@dataclass(eq=False)
class _Slot:
    handle: Any
    kind: str  # episode | solo | judge
    ready: bool = False
    dead: bool = False
    in_flight: int = 0
    label: str = ""
    created: float = field(default_factory=time.monotonic)
    kill_reason: str = ""  # set when the watchdog killed this worker


@dataclass(eq=False)
class _Episode:
    cell: Cell
    attempt: int
    k: int  # attempt number within this invocation (1-based), bounded by max_attempts
    slot: _Slot | None = None
    result: dict | None = None
    packet_ref: Any = None  # (ref of its batch's packets, position): packets stay in the object store
    judgments: list = field(default_factory=list)
    pending_judges: int = 0
    judge_tries: dict = field(default_factory=dict)
    last_error: str = ""


class SweepDriver:
    """Owns the scheduling loop of one run (see the module docstring)."""

    def __init__(self, plan: RunPlan, progress: Progress | None = None, on_tick: Callable[["SweepDriver"], None] | None = None):
        self.plan = plan
        self.cfg = plan.cfg
        self.ex = plan.cfg.execution
        self.progress = progress or Progress("quiet")
        self.on_tick = on_tick
        self.slots: list[_Slot] = []
        self.refs: dict = {}
        self.retry_queue: deque[_Episode] = deque()
        self.isolated_queue: deque[_Episode] = deque()
        self.judge_queue: deque[tuple[_Episode, int]] = deque()
        self.in_flight = 0  # dispatched and not yet buffered for writing (includes retries and judging)
        self.judging = 0  # played, waiting for judgments
        self.counts = {"done": 0, "failed": 0, "retried": 0, "budget_skipped": 0}
        self.worlds = {"generated": 0, "reused": 0, "ahead": 0}
        self.warnings: list[str] = []  # found while running (the manifest lists them after the seed warning)
        self.error: str | None = None  # why the run stopped, when it failed
        self._per_worker = 1  # episodes one episode worker plays at once (set when the pools start)
        self._queue = 0  # episodes one episode worker may hold beyond those (execution.queue_per_worker)
        self._n_workers = 1  # episode workers the pool keeps (set when the pools start)
        self.replacements = 0
        self.consecutive_start_failures = 0
        self._cells = None
        self._cells_exhausted = False
        self._pending_cell = None  # a cell that did not fit the previous batch
        self._undispatched = 0  # set by run()
        self._deadlines: dict = {}  # batch ref -> monotonic deadline (the watchdog)
        self._models = {m.name: {**m.model_dump(), **(m.model_extra or {})} for m in self.cfg.models}
        self._judges_per: dict[str, int] = {}
        self._judging = self.cfg.scoring.judging()
        self.jury = jury_id(self._judging)
        self.judge_spent = 0.0  # USD of LLM judge calls answered so far (scoring.judge_budget_usd)
        self.structured_modes: dict[str, set[str]] = {}  # judge model -> structured-output modes that answered
        self._weights: dict[str, Any] = {}
        self._no_worker_since: dict[str, float] = {}  # pool kind -> since when it has had work and no ready worker
        self.writer = None
        self.budgets = None  # sweep.budget.Budgets when the run has agent budgets
        #: monotonic times of pipeline events (tests check judging overlaps playing)
        self.timeline: dict[str, float] = {}

    # ------------------------------------------------------------------ public
    def episode_workers(self) -> list:
        """Handles of the live episode workers (tests kill them to inject faults)."""
        return [s.handle for s in self.slots if s.kind in ("episode", "solo") and not s.dead]

    @property
    def finished(self) -> int:
        return self.counts["done"] + self.counts["failed"]

    def run(self) -> SweepResult:
        import ray

        from jeval_ray.store.reader import episode_progress
        from jeval_ray.store.writer import RunWriter

        plan, cfg = self.plan, self.cfg
        t0 = time.monotonic()
        completed, max_attempt = (episode_progress(plan.run_path, filesystem=plan.fs) if plan.resume else (set(), {}))
        self.completed, self.max_attempt = completed, max_attempt
        total = len(plan.grid)
        self._cells = (c for c in plan.grid.cells() if c.episode_id not in completed)
        skipped = sum(1 for eid in self._grid_ids() if eid in completed) if completed else 0
        self._undispatched = total - skipped  # cells not yet sent to a worker (guides batch sizes)
        started_at = dt.datetime.now(dt.timezone.utc)
        if plan.address and skipped < total:
            init_ray(plan)  # before the first write: a cluster that cannot be reached leaves no run folder behind
        try:  # the first write (before a local Ray starts): an object store that refuses it is a bad output location
            plan.fs.create_dir(plan.run_path, recursive=True)
            self._write_manifest("running", started_at, total, skipped)
        except OSError as exc:
            raise ConfigError(f"{plan.out_field}: cannot write to {plan.root_uri!r} ({str(exc)[:500]}). Fix: check that "
                              "the bucket or directory exists and that these credentials may write to it.") from None
        self.writer = RunWriter(plan.fs, plan.run_path, flush_episodes=cfg.output.flush_episodes,
                                flush_seconds=cfg.output.flush_seconds, flush_bytes=int(cfg.output.flush_mb * (1 << 20)),
                                threads=cfg.output.writer_threads)
        self.progress.start(total, skipped)
        warn = cfg.seed_warning()
        status = "failed"
        try:
            if skipped < total:  # a finished run resumed: nothing to play, Ray is not needed
                init_ray(plan)
                note, act = auth_note(plan)
                self.progress.log(note)
                if act:
                    self.warnings.append(note)
                self._open_budgets()
                self._start_pools()
                self._loop()
            status = "completed"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except BaseException as exc:
            self.error = f"{type(exc).__name__}: {exc}"[:2000]  # the manifest says why the run failed
            raise
        finally:
            try:
                try:
                    self.writer.flush_all()
                finally:
                    self.writer.close()
            finally:
                self.progress.stop()
                self._write_manifest(status, started_at, total, skipped)
                if ray.is_initialized():
                    self._shutdown_pools(ray)
                    if self.budgets is not None:
                        self.budgets.close()
        st = self.writer.stats
        return SweepResult(run_id=plan.run_id, run_dir=plan.run_uri, total=total, skipped=skipped,
                           done=self.counts["done"], failed=self.counts["failed"], retried=self.counts["retried"],
                           elapsed_s=time.monotonic() - t0, files=dict(st.files), rows=dict(st.rows),
                           write_seconds=st.write_seconds, seed_warning=warn, worker_replacements=self.replacements,
                           budget_skipped=self.counts["budget_skipped"],
                           worlds=dict(self.worlds), warnings=list(self.warnings), timeline=dict(self.timeline))

    # ------------------------------------------------------------------ budgets
    def _open_budgets(self) -> None:
        """The run's agent budgets (``sweep.budget``), their ledgers opened at what the run already spent."""
        from jeval_ray.sweep.budget import Budgets, prior_spend

        if not self.cfg.has_agent_budgets():
            return
        spent = prior_spend(self.plan.run_path, self.plan.fs) if self.plan.resume else {}
        self.budgets = Budgets(self.cfg, self.plan.run_id, self.plan.forecaster(), spent)
        self.budgets.open()

    def _admit(self, cell: Cell) -> bool:
        """Whether ``cell`` may start under the run's budgets; a refused cell is written as ``skipped``."""
        if self.budgets is None:
            return True
        why = self.budgets.admit(cell.episode_id, cell.model, cell.task_id, cell.condition)
        if why is None:
            return True
        attempt = self.max_attempt.get(cell.episode_id, 0) + 1
        keys = EpisodeKeys(self.plan.run_id, cell.episode_id, attempt, cell.task_id, cell.model, cell.seed, cell.condition)
        row = skipped_episode_row(keys, agent=agent_label(self._models[cell.model]), tier=cell.tier,
                                  run_config_json=cell.contract_json, termination=why)
        self.writer.add(cell.task_id, cell.model, {}, rows={"episodes": [row]})
        self._undispatched -= 1
        if not self.counts["budget_skipped"]:
            self.progress.log(f"{why}: no new episode under it starts; the rest are written as skipped")
        self.counts["budget_skipped"] += 1
        return False

    def _settle(self, ep: "_Episode", cost_usd: float | None) -> None:
        if self.budgets is not None:
            self.budgets.settle(ep.cell.episode_id, float(cost_usd or 0.0))

    # ------------------------------------------------------------------ pools
    def _grid_ids(self):
        for c in self.plan.grid.cells():
            yield c.episode_id

    def _n_episode_workers(self) -> int:
        import ray

        if self.ex.episode_workers != "auto":
            return int(self.ex.episode_workers)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        fit = int(max(cpus - _reserved_cpus(self.ex), self.ex.episode_worker_cpus) // self.ex.episode_worker_cpus)
        return max(1, min(int(cpus) or 1, fit))

    def _start_pools(self) -> None:
        n = self._n_workers = self._n_episode_workers()
        mif, per = self.plan.max_in_flight, self.ex.episodes_per_worker
        self._per_worker = -(-mif // n) if per == "auto" else int(per)
        self._queue = resolve_queue(self.ex.queue_per_worker, self._per_worker, self._models.values())
        if n * self._per_worker < min(mif, self._undispatched):  # a grid smaller than the cap is not capped
            msg = (f"at most {n * self._per_worker} episodes play at once ({n} episode workers x "
                   f"execution.episodes_per_worker={self._per_worker}), not max_in_flight={mif}; set "
                   "episodes_per_worker to 'auto' (or higher) to play max_in_flight at once")
            self.warnings.append(msg)
            self.progress.log(f"warning: {msg}")
        for _ in range(n):
            self._new_slot("episode")
        for _ in range(self.ex.judge_workers):
            self._new_slot("judge")

    def _new_slot(self, kind: str) -> _Slot:
        from jeval_ray.sweep.actors import episode_worker_class, judge_worker_class

        ex = self.ex
        if kind == "judge":
            handle = judge_worker_class(ex.judge_worker_cpus, ex.judge_worker_resources, ex.judges_in_flight).remote(
                self._judging)
        elif kind == "solo":
            handle = episode_worker_class(_SOLO_CPUS, ex.episode_worker_resources, 1, ex.scheduling).remote(
                self._models, self.cfg.output.keep_observations, response_cache=ex.response_cache)
        else:
            cls = episode_worker_class(ex.episode_worker_cpus, ex.episode_worker_resources, self._per_worker + self._queue,
                                       ex.scheduling)
            handle = cls.remote(self._models, self.cfg.output.keep_observations, ex.world_cache, self._per_worker,
                                ex.world_cache_entries, response_cache=ex.response_cache)
        slot = _Slot(handle, kind)
        self.slots.append(slot)
        self.refs[handle.ready.remote()] = ("ready", slot)
        return slot

    def _retire(self, slot: _Slot, why: str) -> None:
        """Forget a dead (or unreachable) worker and start a replacement."""
        import ray

        if slot.dead:
            return
        slot.dead = True
        self.slots.remove(slot)
        try:
            ray.kill(slot.handle, no_restart=True)  # an 'unavailable' actor must not come back and run duplicates
        except Exception:  # noqa: BLE001 - it is already gone
            pass
        self.replacements += 1
        self.progress.log(f"worker {slot.label or '?'} ({slot.kind}) lost: {why.splitlines()[0][:200]}; starting a replacement")
        self._new_slot(slot.kind)

    def _shutdown_pools(self, ray) -> None:
        for s in list(self.slots):
            try:
                ray.kill(s.handle, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self.slots.clear()
        self.refs.clear()
        self._deadlines.clear()

    # ------------------------------------------------------------------ loop
    def _loop(self) -> None:
        import ray

        while True:
            self._dispatch()
            if not self.refs and not self._work_left():
                break
            if self.on_tick is not None:
                self.on_tick(self)
            if not self.refs:
                time.sleep(0.05)
                continue
            ready, _ = ray.wait(list(self.refs), num_returns=1, timeout=0.5)
            if ready and len(self.refs) > 1:
                # collect everything else that is already done, so one loop turn handles a batch
                ready, _ = ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
            if ready:
                for ref in ready:
                    self._handle(ref)
            self._check_workers()
            self._check_deadlines()
            self.writer.maybe_flush()
            self.progress.update(done=self.counts["done"], failed=self.counts["failed"], retried=self.counts["retried"],
                                 budget_skipped=self.counts["budget_skipped"],
                                 in_flight=self.in_flight, workers=sum(1 for s in self.slots if s.kind == "episode" and s.ready))

    def _check_deadlines(self) -> None:
        """The watchdog: kill a worker whose batch overran its episodes' deadlines plus the grace.

        An episode's own deadline cannot fire while its worker's event loop is blocked (a wedged
        agent or library call); killing the worker turns its episodes into ordinary lost ones,
        retried within ``max_attempts`` and then written as failed rows with this reason.
        """
        import ray

        now = time.monotonic()
        for ref, deadline in list(self._deadlines.items()):
            if now <= deadline or ref not in self.refs:
                continue
            del self._deadlines[ref]
            eps, slot = self.refs[ref][1]
            if slot.dead or slot.kill_reason:
                continue
            slot.kill_reason = (f"watchdog: worker {slot.label or '?'} did not return a batch of {len(eps)} episode(s) "
                                f"within its deadline (execution.episode_timeout_s={self.ex.episode_timeout_s:g} per "
                                f"episode + watchdog_grace_s={self.ex.watchdog_grace_s:g}); the worker was killed")
            self.progress.log(slot.kill_reason)
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone: its refs fail and are handled as lost
                pass

    def _is_builtin(self, cell: Cell) -> bool:
        return is_builtin(self._models[cell.model])

    def _work_left(self) -> bool:
        return bool(self.in_flight or self.retry_queue or self.isolated_queue or self.judge_queue or not self._cells_exhausted)

    def _check_workers(self) -> None:
        """Abort when a pool that has work waiting has had no ready worker for ``worker_start_timeout_s``
        (episode workers while the grid has work; the judge pool while packets wait to be judged; the
        isolation worker while last attempts wait): a pool the cluster cannot place would stall the sweep."""
        ex = self.ex
        waiting = {"episode": self._work_left(), "judge": bool(self.judge_queue), "solo": bool(self.isolated_queue)}
        now = time.monotonic()
        for kind, has_work in waiting.items():
            if not has_work or any(s.ready for s in self.slots if s.kind == kind and not s.dead):
                self._no_worker_since.pop(kind, None)
                continue
            since = self._no_worker_since.setdefault(kind, now)
            if now - since <= ex.worker_start_timeout_s:
                continue
            needs = {"episode": ("EpisodeWorker", f"num_cpus={ex.episode_worker_cpus:g}", ex.episode_worker_resources,
                                 "execution.episode_worker_cpus"),
                     "judge": ("JudgeWorker", f"num_cpus={ex.judge_worker_cpus:g}", ex.judge_worker_resources,
                               "execution.judge_worker_cpus"),
                     "solo": ("isolation worker", f"num_cpus={_SOLO_CPUS:g}", ex.episode_worker_resources,
                              "execution.episode_workers")}[kind]
            raise SweepError(f"no {needs[0]} could be scheduled for {ex.worker_start_timeout_s:.0f} s (each needs "
                             f"{needs[1]} and {needs[2] or 'no custom resources'}; execution.worker_start_timeout_s); "
                             f"check the cluster's resources or lower {needs[3]}")

    def _pick(self, kind: str, cap: int) -> _Slot | None:
        best = None
        for s in self.slots:
            if s.kind == kind and s.ready and not s.dead and s.in_flight < cap and (best is None or s.in_flight < best.in_flight):
                best = s
        return best

    def _dispatch(self) -> None:
        # last attempts: alone on an isolation worker
        while self.isolated_queue:
            solo = self._pick("solo", 1)
            if solo is None:
                if sum(1 for s in self.slots if s.kind == "solo") < self.ex.isolation_workers:
                    self._new_slot("solo")
                break
            self._submit(self.isolated_queue.popleft(), solo)
        # First every ready worker's playing room (at most max_in_flight play at once); then, once all
        # the workers are up and all are full, their queues (execution.queue_per_worker). A queue only
        # fills when no worker has a free slot: queued work cannot move to a worker that frees up later.
        # Retries go first, either way.
        mif = self.plan.max_in_flight
        while self.retry_queue:
            slot = self._pick("episode", self._per_worker + self._open_queue())
            if slot is None:
                break
            self._submit(self.retry_queue.popleft(), slot)
        self._fill(self._per_worker, mif)
        if self._open_queue():
            ready = sum(1 for s in self.slots if s.kind == "episode" and s.ready and not s.dead)
            self._fill(self._per_worker + self._queue, mif + self._queue * ready)
        while self.judge_queue and sum(s.in_flight for s in self.slots if s.kind == "judge") < self.ex.judges_in_flight:
            slot = self._pick("judge", self.ex.judges_in_flight)
            if slot is None:
                break
            items = [self.judge_queue.popleft() for _ in range(min(self.ex.judge_batch_size, len(self.judge_queue),
                                                                   self.ex.judges_in_flight - slot.in_flight))]
            self._submit_judges(items, slot)

    def _open_queue(self) -> int:
        """The queue each episode worker may hold now: ``_queue`` once all are up and none has a free slot."""
        ready = [s for s in self.slots if s.kind == "episode" and s.ready and not s.dead]
        if self._queue and len(ready) >= self._n_workers and all(s.in_flight >= self._per_worker for s in ready):
            return self._queue
        return 0

    def _fill(self, per_worker: int, total: int) -> None:
        """Send cells to ready episode workers (least loaded first) until each holds ``per_worker``
        episodes or ``total`` are dispatched and not yet played."""
        while not self._cells_exhausted and self.in_flight - self.judging < total and self.judging < self.plan.max_in_flight:
            slot = self._pick("episode", per_worker)
            if slot is None:
                break
            room = min(per_worker - slot.in_flight, total - (self.in_flight - self.judging))
            batch: list[_Episode] = []
            while len(batch) < room:
                cell = self._pending_cell or next(self._cells, None)
                self._pending_cell = None
                if cell is None:
                    self._cells_exhausted = True
                    break
                size = self._batch_size(cell)
                if batch and (size == 1 or len(batch) >= size):
                    self._pending_cell = cell  # starts the next batch
                    break
                if not self._admit(cell):
                    continue
                attempt = self.max_attempt.get(cell.episode_id, 0) + 1
                self.in_flight += 1
                self._undispatched -= 1
                batch.append(_Episode(cell, attempt, 1))
                if size == 1:
                    break
            if batch:
                self._submit_batch(batch, slot)

    def _batch_size(self, cell: Cell) -> int:
        """Episodes per Ray call. ``auto``: 1 for endpoint models; for built-in agents (CPU-bound,
        milliseconds each) guided self-scheduling: large batches while much of the grid is left
        (Ray's per-call cost is spread thin), shrinking towards the end so no worker sits idle
        while another finishes a long last batch."""
        if self.ex.batch_size != "auto":
            return int(self.ex.batch_size)
        if not self._is_builtin(cell):
            return 1
        workers = max(1, sum(1 for s in self.slots if s.kind == "episode" and not s.dead))
        return max(_BUILTIN_BATCH_MIN, min(_BUILTIN_BATCH_MAX, self._undispatched // (2 * workers)))

    def _submit(self, ep: _Episode, slot: _Slot) -> None:
        self._submit_batch([ep], slot)

    def _job(self, ep: _Episode) -> dict:
        c = ep.cell
        return {"run_id": self.plan.run_id, "episode_id": c.episode_id, "attempt": ep.attempt, "task_id": c.task_id,
                "tier": c.tier, "model": c.model, "seed": c.seed, "condition": c.condition,
                "tools_withheld": list(c.tools_withheld), "knobs": c.knobs, "step_budget": c.step_budget,
                "contract_json": c.contract_json, "timeout_s": self.ex.episode_timeout_s}

    def _submit_batch(self, eps: list[_Episode], slot: _Slot) -> None:
        for ep in eps:
            ep.slot = slot
        slot.in_flight += len(eps)
        now = time.monotonic()
        self.timeline.setdefault("first_dispatch", now)
        batch_ref, packets_ref = slot.handle.run_many.options(num_returns=2).remote([self._job(ep) for ep in eps])
        for i, ep in enumerate(eps):
            ep.packet_ref = (packets_ref, i)
        self.refs[batch_ref] = ("episodes", (eps, slot))
        if self.ex.episode_timeout_s is not None:
            # Episodes of endpoint models run concurrently (each awaits its model), one turn of the
            # worker's plays if they have to queue behind them first; CPU-bound built-in episodes run
            # one after another, so a batch may wait behind all the worker's others.
            if all(self._is_builtin(ep.cell) for ep in eps):
                ahead = slot.in_flight
            else:
                ahead = 1 if slot.in_flight <= self._per_worker else 2
            self._deadlines[batch_ref] = now + self.ex.episode_timeout_s * ahead + self.ex.watchdog_grace_s

    def _judge_name(self, ep: _Episode, idx: int) -> str:
        return assign_judge(self.cfg.scoring.judges, ep.cell.episode_id, idx)

    def _over_budget(self) -> bool:
        cap = self.cfg.scoring.judge_budget_usd
        return cap is not None and self.judge_spent >= cap

    def _submit_judges(self, items: list[tuple[_Episode, int]], slot: _Slot) -> None:
        rubric = self.cfg.scoring.judge
        if self._over_budget():  # LLM judgments past the cap are recorded unscored, not sent
            cap = self.cfg.scoring.judge_budget_usd
            send = []
            for ep, idx in items:
                name = self._judge_name(ep, idx)
                if name in self._judging["models"]:
                    seed = judge_seed(ep.cell.episode_id, idx)
                    self._judged(ep, idx, Judgment(
                        judge=name, rubric=rubric, status="unscored", rationale_score=None, judge_model=name,
                        judge_seed=seed, error=f"budget: scoring.judge_budget_usd={cap:g} spent "
                                               f"({self.judge_spent:.4f} USD)").as_record())
                else:
                    send.append((ep, idx))
            items = send
            if not items:
                return
        slot.in_flight += len(items)
        calls = [(*ep.packet_ref, self._judge_name(ep, idx), rubric, idx, judge_seed(ep.cell.episode_id, idx))
                 for ep, idx in items]
        self.refs[slot.handle.judge_many.remote(calls)] = ("judges", (items, slot))

    # ------------------------------------------------------------------ results
    def _handle(self, ref) -> None:
        import ray
        from ray.exceptions import ObjectLostError, RayActorError, WorkerCrashedError

        kind, payload = self.refs.pop(ref)
        lost = (RayActorError, WorkerCrashedError, ObjectLostError)
        if kind == "ready":
            slot = payload
            if slot.dead:
                return
            try:
                info = ray.get(ref)
                slot.ready, slot.label = True, info["label"]
                self.consecutive_start_failures = 0
            except lost as exc:
                self.consecutive_start_failures += 1
                if self.consecutive_start_failures > 10:
                    raise SweepError(f"workers die while starting: {exc}") from exc
                self._retire(slot, f"failed to start: {exc}")
            return
        if kind == "episodes":
            eps, slot = payload
            slot.in_flight -= len(eps)
            self._deadlines.pop(ref, None)
            try:
                results = _unpack_batch(ray.get(ref))
            except lost as exc:
                why = slot.kill_reason or f"{type(exc).__name__}: {exc}"
                self._retire(slot, why)
                for ep in eps:
                    self._episode_lost(ep, why)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. a result that could not be deserialised
                err = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:8000], "worker": slot.label}
                results = [err] * len(eps)
            self.timeline["last_episode_result"] = time.monotonic()
            for ep, result in zip(eps, results):
                self._episode_result(ep, result)
            return
        items, slot = payload
        self.timeline.setdefault("first_judgment", time.monotonic())
        slot.in_flight -= len(items)
        try:
            answers = ray.get(ref)
        except lost as exc:
            self._retire(slot, str(exc))
            answers = [None] * len(items)
            err = f"judge worker died on every attempt: {type(exc).__name__}: {exc}"[:2000]
        except Exception as exc:  # noqa: BLE001
            answers = [{"__lost__": f"{type(exc).__name__}: {exc}"[:2000]}] * len(items)
        for (ep, idx), answer in zip(items, answers):
            name = self._judge_name(ep, idx)
            if answer is None:  # its judge worker died: judge again elsewhere, within bounds
                tries = ep.judge_tries.get(idx, 1)
                if tries < self.ex.max_attempts:
                    ep.judge_tries[idx] = tries + 1
                    self.judge_queue.append((ep, idx))
                    continue
                j = Judgment(judge=name, rubric=self.cfg.scoring.judge, status="failed", error=err).as_record()
            elif "__lost__" in answer:
                j = Judgment(judge=name, rubric=self.cfg.scoring.judge, status="failed", error=answer["__lost__"]).as_record()
            else:
                j = answer  # a judgment record, validated by the judge worker (Judgment.as_record)
                self.judge_spent += j.get("cost_usd") or 0.0
                if j.get("judge_model") and j.get("structured_output") and j.get("calls"):
                    self.structured_modes.setdefault(j["judge_model"], set()).add(j["structured_output"])
            self._judged(ep, idx, j)

    def _judged(self, ep: _Episode, idx: int, record: dict) -> None:
        ep.judgments[idx] = record
        ep.pending_judges -= 1
        if ep.pending_judges == 0:
            self._finish(ep)

    def _episode_lost(self, ep: _Episode, error: str) -> None:
        ep.last_error = error
        if ep.k >= self.ex.max_attempts:
            self._write_failed(ep, f"worker died on every attempt ({ep.k} attempt(s) in this run); last error: {error}")
            return
        self.counts["retried"] += 1
        nxt = _Episode(ep.cell, ep.attempt + 1, ep.k + 1, last_error=error)
        (self.isolated_queue if nxt.k == self.ex.max_attempts and self.ex.max_attempts > 1 else self.retry_queue).append(nxt)

    def _episode_result(self, ep: _Episode, result: dict) -> None:
        if result["status"] != "ok":
            self._write_failed(ep, result["error"], worker=result.get("worker", ""))
            return
        ep.result = result
        self.worlds["reused" if result.get("world_reused") else "generated"] += 1
        self.worlds["ahead"] += bool(result.get("world_ahead"))
        if not result["judge"]:  # the episode itself failed (timeout, model error): nothing to judge
            ep.packet_ref = None
            self._finish(ep)
            return
        n = self._judges_for(ep.cell)
        self.judging += 1
        ep.judgments = [None] * n
        ep.pending_judges = n
        for i in range(n):
            self.judge_queue.append((ep, i))

    def _judges_for(self, cell: Cell) -> int:
        key = (cell.task_id, cell.condition)
        if key not in self._judges_per:
            c = json.loads(cell.contract_json)
            self._judges_per[key] = int(c["scoring"]["judges_per_episode"])
            from jeval_ray.tasks import Weights

            self._weights[key] = Weights(**c["scoring"]["weights"])
        return self._judges_per[key]

    def _finish(self, ep: _Episode) -> None:
        c, r = ep.cell, ep.result
        row = r["row"]
        keys = self._keys(ep)
        tables = {name: r[name] for name in ("steps", "dispositions") if name in r}
        rows: dict[str, list[dict]] = {}
        if ep.judgments:
            self.judging -= 1
            agg = aggregate_judgments(ep.judgments)
            w = self._weights[(c.task_id, c.condition)]
            row.update(rationale=agg["rationale"], judge_spread=agg["judge_spread"], judges_ok=agg["judges_ok"],
                       judges_failed=agg["judges_failed"], judges_unscored=agg["judges_unscored"],
                       judge_cost_usd=sum(j.get("cost_usd") or 0.0 for j in ep.judgments),
                       judge_tokens_in=sum(j.get("tokens_in") or 0 for j in ep.judgments),
                       judge_tokens_out=sum(j.get("tokens_out") or 0 for j in ep.judgments),
                       score=None if agg["rationale"] is None else combine(w, row["outcome"], row["process"], agg["rationale"]))
            rows["judgments"] = judgment_rows(keys, ep.judgments, jury=self.jury)
        rows["episodes"] = [row]
        self._settle(ep, row.get("cost_usd"))
        ep.packet_ref = None  # release the packet
        self.writer.add(c.task_id, c.model, tables, rows=rows, sizes=r.get("sizes"))
        self.timeline["last_finish"] = time.monotonic()
        self.in_flight -= 1
        self.counts["done" if row["status"] == "completed" else "failed"] += 1

    def _write_failed(self, ep: _Episode, error: str, worker: str = "") -> None:
        c = ep.cell
        row = failed_episode_row(self._keys(ep), agent=agent_label(self._models[c.model]), tier=c.tier, run_config_json=c.contract_json,
                                 error=error[:8000], termination="error", worker=worker)
        # what a lost or crashed episode spent is unknown: its forecast counts as spent
        self._settle(ep, self.budgets.forecaster.usd(c.model, c.task_id, c.condition) if self.budgets else 0.0)
        self.writer.add(c.task_id, c.model, {}, rows={"episodes": [row]})
        self.timeline["last_finish"] = time.monotonic()
        self.in_flight -= 1
        self.counts["failed"] += 1

    def _keys(self, ep: _Episode) -> EpisodeKeys:
        c = ep.cell
        return EpisodeKeys(self.plan.run_id, c.episode_id, ep.attempt, c.task_id, c.model, c.seed, c.condition)

    # ------------------------------------------------------------------ manifest
    def _write_manifest(self, status: str, started_at: dt.datetime, total: int, skipped: int) -> None:
        from jeval_ray.store.writer import write_json_atomic
        from jeval_ray.world._version import world_versions

        plan, cfg = self.plan, self.cfg
        old = _read_manifest(plan.fs, plan.run_path) or {}
        invocations = [i for i in old.get("invocations", []) if i.get("started_at") != started_at.isoformat()]
        invocations.append({"started_at": started_at.isoformat(), "updated_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                            "status": status, "skipped": skipped, "done": self.counts["done"],
                            "failed": self.counts["failed"], "retried": self.counts["retried"],
                            "budget_skipped": self.counts["budget_skipped"],
                            "worker_replacements": self.replacements, "worlds": dict(self.worlds)})
        warn = cfg.seed_warning()
        manifest = {
            "kind": MANIFEST_KIND, "run_id": plan.run_id, "name": cfg.name, "status": status,
            "created_at": old.get("created_at", started_at.isoformat()),
            "updated_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "package": "jeval_ray", "package_version": __version__,
            "sweep_config": cfg.model_dump(mode="json"), "config_digest": cfg.digest(),
            "world_versions": {**(old.get("world_versions") or {}), **world_versions(t.id for t in plan.grid.tasks)},
            "grid": {"episodes": total, "tasks": [t.id for t in plan.grid.tasks], "models": plan.grid.models,
                     "seeds": plan.grid.seeds, "conditions": {t: [c.name for c in cs] for t, cs in plan.grid.conditions.items()}},
            "seed_warning": warn, "warnings": ([warn] if warn else []) + self.warnings,
            "environment": environment_info(), "ray_address": plan.address or "local",
            "layout": {"datasets": ["steps", "episodes", "dispositions", "judgments"],
                       "partitioning": "hive: task_id=<id>/model=<uri-encoded name>", "files": "part-<uuid>.parquet"},
            "dedup_rule": DEDUP_RULE,
            "error": self.error if status == "failed" else None,
            "invocations": invocations,
            "judging": self._judging_block(old.get("judging") or {}, final=status != "running"),
            "budgets": self.budgets.summary() if self.budgets is not None else None,
        }
        write_json_atomic(plan.fs, f"{plan.run_path}/{MANIFEST}", manifest)

    def _judging_block(self, old: dict, final: bool) -> dict:
        """``manifest.judging``: the sweep's jury id and every jury of the run (re-scores included) with its
        counts, unscored reasons, cost, agreement and reference calibration, computed from the judgments
        rows once the run ends (while it runs, the descriptions only)."""
        from jeval_ray.scoring.jury import described_juries, describe_jury, judging_summary
        from jeval_ray.store.reader import read_judgment_rows

        described = described_juries(old)
        described[self.jury] = describe_jury(self._judging, "sweep", self.cfg.scoring.judge_budget_usd)
        block = {"sweep_jury": self.jury, "rescores": old.get("rescores", []), "juries": described}
        # judge model -> the structured-output modes its endpoint answered (auto falls back: docs/scoring.md)
        modes = {m: set(v) for m, v in (old.get("structured_output") or {}).items()}
        for m, v in self.structured_modes.items():
            modes.setdefault(m, set()).update(v)
        block["structured_output"] = {m: sorted(v) for m, v in sorted(modes.items())}
        if final:
            try:
                rows = read_judgment_rows(self.plan.run_path, self.plan.fs)
                block["juries"] = judging_summary(rows, described)
            except Exception as exc:  # noqa: BLE001 - the manifest must still be written; the reason is kept
                block["error"] = f"judging summary not computed: {type(exc).__name__}: {exc}"[:2000]
        return block


#: CPUs reserved by an isolation worker (it runs one episode at a time)
_SOLO_CPUS = 0.1
#: episodes per Ray call for built-in agents (batch_size: auto): from MAX down to MIN as the grid runs out
_BUILTIN_BATCH_MAX = 32
_BUILTIN_BATCH_MIN = 4


def resolve_queue(setting: int | str, per_worker: int, models) -> int:
    """Episodes an episode worker may hold beyond the ``per_worker`` it plays (``execution.queue_per_worker``):
    ``auto`` gives each worker a queue as long as what it plays when any model waits on latency (an
    endpoint, the ``sleep`` agent: its worker is idle between turns and builds the queued worlds
    then), and none when every model is a CPU-bound built-in agent."""
    if setting != "auto":
        return int(setting)
    return per_worker if any(waits_on_latency(m) for m in models) else 0


def _unpack_batch(batch: dict) -> list[dict]:
    """Results of ``EpisodeWorker.run_many``, each with its own slice of the batch's record tables."""
    from jeval_ray.records import table_from_ipc

    tables = {name: table_from_ipc(batch[name]) for name in ("steps", "dispositions") if batch[name] is not None}
    # a slice's share of its batch's bytes (exact nbytes of a slice is costly to compute)
    per_row = {name: len(batch[name]) / max(t.num_rows, 1) for name, t in tables.items()}
    results = pickle.loads(batch["results"])  # pickled by our own EpisodeWorker (see run_many)
    for r in results:
        sizes = {}
        for name in ("steps", "dispositions"):
            span = r.pop(f"{name}_rows", None)
            if span is not None and name in tables:
                r[name] = tables[name].slice(*span)
                sizes[name] = int(per_row[name] * span[1])
        r["sizes"] = sizes
    return results


def run_sweep(cfg: SweepConfig | RunPlan, *, out: str | None = None, run_id: str | None = None, address: str | None = None,
              max_in_flight: int | None = None, progress: str | Progress = "quiet",
              on_tick: Callable[[SweepDriver], None] | None = None, filesystem=None,
              forecast_from: str | None = None) -> SweepResult:
    """Plan (unless given a plan), start or join Ray, run the sweep; returns counts and where it wrote.

    Raises ``ConfigError`` for a bad config or output location, before Ray is started: from planning,
    or when the output location refuses the first write (the manifest).
    """
    plan = cfg if isinstance(cfg, RunPlan) else plan_run(cfg, out=out, run_id=run_id, address=address,
                                                          max_in_flight=max_in_flight, filesystem=filesystem,
                                                          forecast_from=forecast_from)
    prog = progress if isinstance(progress, Progress) else Progress(progress)
    return SweepDriver(plan, prog, on_tick).run()


__all__ = ["DEDUP_RULE", "MANIFEST", "RunPlan", "SweepDriver", "SweepError", "SweepResult", "check_pools_fit",
           "auth_note", "check_address", "environment_info", "in_ray_job", "init_ray", "plan_run", "run_sweep"]
