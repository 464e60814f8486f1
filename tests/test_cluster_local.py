"""A real local cluster as cluster/README.md has a user start it: Ray's own CLI (``ray start --head``,
``ray status``, ``ray job submit``) in subprocesses, with Ray 2.60's token authentication on.

The head runs on free ports with its own temp dir (RAY_TMPDIR) and its own HOME, so its token
(``ray get-auth-token --generate`` writes ``$HOME/.ray/auth_token``) is this test's alone. It is
stopped by signalling its process group: ``ray stop`` stops every Ray process of the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT

from jeval_ray.store import read_dataset

BIN = Path(sys.executable).parent
#: the quick grid every sweep here plays: 1 task x 1 model x 2 seeds x 1 condition
GRID = ["--tasks", "JE-1", "--models", "careful", "--seeds", "2", "--conditions", "full"]


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Head:
    """A ``ray start --head --block`` in its own process group, and the environment of its users."""

    def __init__(self):
        self.base = Path(tempfile.mkdtemp(prefix="jr-", dir="/tmp"))  # short: Ray's socket paths have a length limit
        (self.base / "home").mkdir()
        self.gcs, self.dashboard, self.client, self.agent, self.agent_grpc, self.metrics = _free_ports(6)
        self.address = f"127.0.0.1:{self.gcs}"
        self.env = {**os.environ, "HOME": str(self.base / "home"), "RAY_TMPDIR": str(self.base),
                    "RAY_USAGE_STATS_ENABLED": "0", "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                    "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "token"}
        for k in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
            self.env.pop(k, None)
        self.proc: subprocess.Popen | None = None

    def ray(self, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "ray"), *args], capture_output=True, text=True, timeout=timeout,
                              env={**self.env, **(env or {})}, cwd=str(ROOT))

    def sweep(self, *args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        e = {**self.env, **(env or {})}
        return subprocess.run([sys.executable, "-m", "jeval_ray.sweep", *args], capture_output=True, text=True,
                              timeout=timeout, env={k: v for k, v in e.items() if v is not None}, cwd=str(ROOT))

    def start(self) -> None:
        gen = self.ray("get-auth-token", "--generate")  # cluster/README.md's first step
        assert gen.returncode == 0, gen.stderr
        self.log = open(self.base / "ray-start.log", "w")
        self.proc = subprocess.Popen(
            [str(BIN / "ray"), "start", "--head", "--block", f"--port={self.gcs}", "--num-cpus=2",
             f"--dashboard-port={self.dashboard}", "--dashboard-host=127.0.0.1", f"--ray-client-server-port={self.client}",
             f"--dashboard-agent-listen-port={self.agent}", f"--dashboard-agent-grpc-port={self.agent_grpc}",
             f"--metrics-export-port={self.metrics}", "--object-store-memory=200000000", "--disable-usage-stats"],
            env=self.env, cwd=str(self.base), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ray start exited: {(self.base / 'ray-start.log').read_text()[-3000:]}")
            st = self.ray("status", f"--address={self.address}", timeout=60)
            if st.returncode == 0 and " CPU" in st.stdout:  # the autoscaler has reported the node
                return
            time.sleep(1)
        raise RuntimeError("the head did not come up in 90 s")

    def stop(self) -> None:
        if self.proc is not None:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):  # a test cluster need not shut down gently
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                except subprocess.TimeoutExpired:
                    continue
                time.sleep(1)  # the group's other processes (GCS, raylet, workers) go with their parent's signal
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the group is left
            except ProcessLookupError:
                pass
            self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def head():
    h = Head()
    try:
        h.start()
        yield h
    finally:
        h.stop()


def _episodes(run_dir: Path) -> list[dict]:
    return read_dataset(str(run_dir), "episodes").to_pylist()


def _run_dir(root: Path) -> Path:
    runs = [p for p in root.iterdir() if (p / "manifest.json").is_file()]
    assert len(runs) == 1, runs
    return runs[0]


def test_ray_status_works_as_documented_and_says_why_without_the_token_mode(head):
    ok = head.ray("status", f"--address={head.address}")
    assert ok.returncode == 0 and "2.0 CPU" in ok.stdout, ok.stderr[-2000:]
    # what issue 18 met: a shell without RAY_AUTH_MODE=token is refused (cluster/README.md says to export it)
    refused = head.ray("status", f"--address={head.address}", env={"RAY_AUTH_MODE": "disabled"})
    assert refused.returncode != 0 and "AuthenticationError" in refused.stdout + refused.stderr


def test_a_sweep_joins_with_address_auto_and_with_ray_address_and_writes_where_asked(head, tmp_path):
    r = head.sweep("--address", "auto", "--out", str(tmp_path / "auto"), "--plain", "--no-leaderboard", *GRID)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Token authentication is enabled" not in r.stderr + r.stdout  # Ray's own notice is replaced by ...
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("ray: ")]
    assert len(notes) == 1 and notes[0].startswith("ray: token authentication is on for the cluster at "), r.stderr
    assert notes[0].endswith(f":{head.gcs}; nothing to do.")  # auto, resolved to this head
    run = _run_dir(tmp_path / "auto")
    assert [e["status"] for e in _episodes(run)] == ["completed", "completed"]
    m = json.loads((run / "manifest.json").read_text())
    assert m["ray_address"] == "auto" and m["environment"]["ray_cluster_resources"]["CPU"] == 2.0

    r = head.sweep("--out", str(tmp_path / "env"), "--quiet", "--no-leaderboard", *GRID, env={"RAY_ADDRESS": head.address})
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(_episodes(_run_dir(tmp_path / "env"))) == 2
    assert json.loads((_run_dir(tmp_path / "env") / "manifest.json").read_text())["ray_address"] == head.address


def test_a_sweep_without_the_token_mode_is_one_line_naming_the_fix_and_no_run_folder(head, tmp_path):
    r = head.sweep("--out", str(tmp_path / "out"), *GRID, env={"RAY_ADDRESS": head.address, "RAY_AUTH_MODE": None})
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 2 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "export RAY_AUTH_MODE=token" in errors[0] and head.address in errors[0]
    assert not (tmp_path / "out").exists()


def _submit(head: Head, *sweep_args: str) -> subprocess.CompletedProcess:
    """cluster/README.md's job submission, word for word but for the addresses and the grid."""
    return head.ray("job", "submit", "--runtime-env", "cluster/runtime_env.yaml", "--", "python", "-m", "jeval_ray.sweep",
                    *sweep_args, env={"RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{head.dashboard}",
                                      "RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES": ""}, timeout=240)


def test_ray_job_submit_runs_a_sweep_that_writes_where_asked(head, tmp_path):
    out = tmp_path / "job-runs"
    r = _submit(head, "--out", str(out), "--plain", *GRID)
    log = r.stdout + r.stderr
    assert r.returncode == 0 and "succeeded" in log, log[-4000:]
    assert "is now ignored" not in log  # runtime_env.yaml excludes .git itself (cluster/README.md)
    assert "ray: token authentication is on" in log
    run = _run_dir(out)
    assert [e["status"] for e in _episodes(run)] == ["completed", "completed"]


def test_a_job_with_a_relative_output_root_fails_naming_out_and_shared_storage(head, tmp_path):
    r = _submit(head, "--plain", *GRID)  # the default output.root: runs, relative
    log = r.stdout + r.stderr
    assert r.returncode != 0 and "failed" in log, log[-4000:]
    assert "error: output.root: the output root 'runs' is relative" in log and "--out" in log and "shared storage" in log


def test_a_sweep_with_the_wrong_token_is_one_line_saying_so(head, tmp_path):
    wrong = tmp_path / "wrong_token"
    wrong.write_text("0" * 64)
    r = head.sweep("--out", str(tmp_path / "out"), *GRID, env={"RAY_ADDRESS": head.address,
                                                                "RAY_AUTH_TOKEN_PATH": str(wrong)})
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 2 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "refused this process's token" in errors[0] and not (tmp_path / "out").exists()
