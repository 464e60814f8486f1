"""Output on an object store: a sweep written to ``s3://`` (a real S3 protocol server on 127.0.0.1,
moto's), read back, resumed there; a missing bucket and credentials inside the URI are bad output
locations (exit 2, Ray not started)."""

from __future__ import annotations

import json
import logging
import os
import socket

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest
import yaml
from conftest import run_cli, tiny_config

from jeval_ray.store import read_dataset

SECRET = "s3-test-secret-0b1d"


@pytest.fixture(scope="module")
def s3():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "jeval-test", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    query = f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
    fs, _ = pafs.FileSystem.from_uri(f"s3://runs-bucket?{query}&allow_bucket_creation=true")
    fs.create_dir("runs-bucket")
    try:
        yield type("S3", (), {"env": env, "fs": fs, "uri": staticmethod(lambda path: f"s3://{path}?{query}")})
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _config(tmp_path) -> str:
    cfg = tiny_config(tmp_path, models=[{"name": "careful", "agent": "careful"}, {"name": "org/naive", "agent": "naive"}])
    path = tmp_path / "s3.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _keys(fs, prefix: str) -> list[str]:
    infos = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == pafs.FileType.File)


def test_a_sweep_writes_its_datasets_to_s3_and_resumes_there(s3, tmp_path):
    cfg = _config(tmp_path)
    out = run_cli("--config", cfg, "--out", s3.uri("runs-bucket/sweeps"), "--run-id", "r1", "--plain", env=s3.env)
    assert out.returncode == 0, out.stderr[-3000:]
    run_uri = s3.uri("runs-bucket/sweeps/r1")  # the run id joins the path, the query stays last
    assert f"output: {run_uri}" in out.stdout

    episodes = read_dataset(run_uri, "episodes")
    assert episodes.num_rows == 4 and set(episodes["status"].to_pylist()) == {"completed"}
    assert sorted(set(episodes["model"].to_pylist())) == ["careful", "org/naive"]
    assert read_dataset(run_uri, "judgments").num_rows == 4
    steps = ds.dataset("runs-bucket/sweeps/r1/steps", filesystem=s3.fs, format="parquet", partitioning="hive")
    assert steps.count_rows() == read_dataset(run_uri, "steps").num_rows > 0
    keys = _keys(s3.fs, "runs-bucket/sweeps/r1")
    assert not [k for k in keys if k.endswith(".tmp") or "/." in k]  # no temp objects left behind
    manifest = json.loads(s3.fs.open_input_stream("runs-bucket/sweeps/r1/manifest.json").read())
    assert manifest["status"] == "completed" and SECRET not in json.dumps(manifest)

    again = run_cli("--config", cfg, "--out", s3.uri("runs-bucket/sweeps"), "--run-id", "r1", "--plain", env=s3.env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 completed, 0 failed, 4 skipped" in again.stdout
    assert [k for k in _keys(s3.fs, "runs-bucket/sweeps/r1") if k.endswith(".parquet")] == \
        [k for k in keys if k.endswith(".parquet")]
    assert SECRET not in out.stdout + out.stderr + again.stdout + again.stderr


def test_a_bucket_that_does_not_exist_is_a_bad_output_location(s3, tmp_path, capsys):
    import ray

    from jeval_ray.sweep.__main__ import main

    assert main(["--config", _config(tmp_path), "--out", s3.uri("no-such-bucket/sweeps"), "--run-id", "r1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "error: --out: cannot write to" in err and "Fix:" in err
    assert not ray.is_initialized()
    assert not s3.fs.get_file_info("no-such-bucket").type == pafs.FileType.Directory


def test_credentials_inside_the_output_uri_are_refused_and_not_echoed(s3, tmp_path, capsys):
    import ray

    from jeval_ray.sweep.__main__ import main

    uri = s3.uri(f"jeval-test:{SECRET}@runs-bucket/sweeps")
    assert main(["--config", _config(tmp_path), "--out", uri, "--run-id", "r2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out: the output URI carries a secret" in err and "AWS_SECRET_ACCESS_KEY" in err
    assert SECRET not in err and not ray.is_initialized()
    assert _keys(s3.fs, "runs-bucket/sweeps/r2") == []


def test_join_uri_keeps_the_query_last_and_only_a_secret_in_the_user_info_counts_as_credentials():
    from jeval_ray._fs import has_credentials, join_uri

    assert join_uri("s3://b/runs/?endpoint_override=h:9000&scheme=http", "r1") == "s3://b/runs/r1?endpoint_override=h:9000&scheme=http"
    assert join_uri("/data/runs/", "r1") == "/data/runs/r1" and join_uri("gs://b", "r1") == "gs://b/r1"
    assert has_credentials("s3://AKIA:secret@b/runs")
    assert not has_credentials("hdfs://alice@namenode:8020/runs")  # a user name, not a secret
    assert not has_credentials("abfs://container@account.dfs.core.windows.net/runs")
    assert not has_credentials("/home/a@b/runs") and not has_credentials("s3://b/runs?region=us-east-1")
