"""The cluster/ files parse and agree with the package: Ray version, image, entrypoints."""

import re
import shlex
import tomllib
from pathlib import Path

import importlib.util

import ray
import yaml

import jeval_ray

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "cluster"


def _ray_pin() -> str:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("ray"))
    return re.search(r"==\s*([\d.]+)", spec).group(1).rstrip(".")


def test_every_yaml_file_parses():
    files = sorted(CLUSTER.glob("*.yaml"))
    assert {f.name for f in files} >= {"ray-cluster.yaml", "kuberay-raycluster.yaml", "kuberay-rayjob.yaml", "runtime_env.yaml"}
    for f in files:
        assert yaml.safe_load(f.read_text()), f


def test_installed_ray_matches_the_pin():
    assert ray.__version__.startswith(_ray_pin())


def test_image_recipe_and_manifests_pin_the_same_ray_version():
    pin = _ray_pin()
    docker = (CLUSTER / "Dockerfile").read_text()
    assert re.search(rf"FROM rayproject/ray:{re.escape(pin)}\.\d+-py311", docker)
    assert f'ray[default]=={pin}' in docker
    launcher = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    assert launcher["docker"]["image"].startswith(f"rayproject/ray:{pin}")
    for name in ("kuberay-raycluster.yaml", "kuberay-rayjob.yaml"):
        doc = yaml.safe_load((CLUSTER / name).read_text())
        spec = doc["spec"].get("rayClusterSpec", doc["spec"])
        assert spec["rayVersion"].startswith(pin)


def test_images_carry_the_package_version():
    for name in ("kuberay-raycluster.yaml", "kuberay-rayjob.yaml"):
        text = (CLUSTER / name).read_text()
        tags = set(re.findall(r"image: jeval-ray:([\w.]+)", text))
        assert tags == {jeval_ray.__version__}, (name, tags)


def test_launcher_installs_this_package():
    launcher = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    mount = next(k for k, v in launcher["file_mounts"].items() if v == ".")
    assert any(f"pip install -e {mount}" in c for c in launcher["setup_commands"])


def test_rayjob_entrypoint_runs_the_sweep_module_with_known_options():
    job = yaml.safe_load((CLUSTER / "kuberay-rayjob.yaml").read_text())
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:3] == ["python", "-m", "jeval_ray.sweep"]
    assert importlib.util.find_spec("jeval_ray.sweep") is not None
    config = argv[argv.index("--config") + 1]
    assert (ROOT / "configs" / Path(config).name).exists()
    from jeval_ray.sweep.__main__ import build_parser

    known = {o for a in build_parser()._actions for o in a.option_strings}
    assert {a for a in argv if a.startswith("--")} <= known


def test_the_launcher_says_which_image_it_runs_and_installs_the_checkout():
    text = (CLUSTER / "ray-cluster.yaml").read_text()
    header = "".join(ln for ln in text.splitlines(keepends=True) if ln.startswith("#"))
    image = yaml.safe_load(text)["docker"]["image"]
    assert image.split(":")[0] in header and "jeval_ray image" not in header
    assert "setup_commands" in header


def _head_and_workers(doc: dict) -> list[dict]:
    spec = doc["spec"].get("rayClusterSpec", doc["spec"])
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    return [c for g in groups for c in g["template"]["spec"]["containers"]]


def test_every_node_of_every_cluster_file_has_token_authentication_as_the_readme_says():
    for name in ("kuberay-raycluster.yaml", "kuberay-rayjob.yaml"):
        for c in _head_and_workers(yaml.safe_load((CLUSTER / name).read_text())):
            env = {e["name"]: e for e in c["env"]}
            assert env["RAY_AUTH_MODE"]["value"] == "token", (name, c["name"])
            assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "jeval-ray-auth-token", (name, c["name"])
    launcher = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    assert "~/.ray/auth_token" in launcher["file_mounts"].values()
    for cmd in launcher["head_start_ray_commands"] + launcher["worker_start_ray_commands"]:
        assert "ray start" not in cmd or cmd.startswith("RAY_AUTH_MODE=token ray start"), cmd
    readme = (CLUSTER / "README.md").read_text()
    for needle in ("RAY_AUTH_MODE=token", "~/.ray/auth_token", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH",
                   "RAY_AUTH_MODE=disabled", "jeval-ray-auth-token"):
        assert needle in readme, needle


def test_the_readme_says_num_cpus_0_only_of_the_files_that_set_it():
    readme = " ".join((CLUSTER / "README.md").read_text().split())
    sentence = next(s for s in readme.split(". ") if "num-cpus: 0" in s)
    assert "KubeRay manifests" in sentence
    for name in ("kuberay-raycluster.yaml", "kuberay-rayjob.yaml"):
        doc = yaml.safe_load((CLUSTER / name).read_text())
        assert doc["spec"].get("rayClusterSpec", doc["spec"])["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    launcher = yaml.safe_load((CLUSTER / "ray-cluster.yaml").read_text())
    assert not any("--num-cpus=0" in c for c in launcher["head_start_ray_commands"])  # the README says it keeps its CPUs


def test_job_submission_uses_the_job_clis_own_address_variable():
    for path in (CLUSTER / "README.md", ROOT / "README.md", ROOT / "docs" / "sweep.md"):
        text = path.read_text()
        assert "RAY_ADDRESS=http" not in text, path  # the sweep would take it for the cluster's address
    assert "RAY_API_SERVER_ADDRESS=http" in (CLUSTER / "README.md").read_text()


def test_the_runtime_env_excludes_rays_default_excludes_itself():
    """cluster/README.md runs the job CLI with RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES= (no notice about .git)."""
    from ray._private.ray_constants import RAY_RUNTIME_ENV_DEFAULT_EXCLUDES

    excludes = yaml.safe_load((CLUSTER / "runtime_env.yaml").read_text())["excludes"]
    for d in RAY_RUNTIME_ENV_DEFAULT_EXCLUDES.split(","):
        assert d in excludes, d
    assert "RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES= ray job submit --runtime-env cluster/runtime_env.yaml" in \
        (CLUSTER / "README.md").read_text()
