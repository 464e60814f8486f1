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
