"""The Ray sweep runner: ``tasks x models x seeds x conditions`` episodes, judged, written as Parquet.

``python -m jeval_ray.sweep`` is the CLI (see ``--help`` and docs/sweep.md). From Python::

    from jeval_ray.sweep import load_sweep_config, run_sweep
    result = run_sweep(load_sweep_config("configs/local.yaml"), out="runs")
    print(result.run_dir)
"""

#: Public names and the module that defines each. Imported on first use (PEP 562), so a Ray
#: worker that unpickles ``jeval_ray.sweep.actors`` does not import the driver, the readers
#: (pyarrow.dataset, pandas) or the config machinery: worker start-up is part of every sweep.
_EXPORTS = {
    "make_model_agent": "agents",
    "SweepConfig": "config", "json_schema": "config", "load_sweep_config": "config", "validate_config": "config",
    "RunPlan": "driver", "SweepDriver": "driver", "SweepError": "driver", "SweepResult": "driver", "plan_run": "driver",
    "run_sweep": "driver",
    "Cell": "grid", "Grid": "grid",
}

__all__ = sorted(_EXPORTS)


def _module(name: str):
    # plain imports (not importlib on a name), so the package's import graph shows them
    if name == "agents":
        from jeval_ray.sweep import agents as module
    elif name == "config":
        from jeval_ray.sweep import config as module
    elif name == "driver":
        from jeval_ray.sweep import driver as module
    else:
        from jeval_ray.sweep import grid as module
    return module


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jeval_ray.sweep' has no attribute {name!r}")
    value = getattr(_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
