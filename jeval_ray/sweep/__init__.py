"""The Ray sweep runner: ``tasks x models x seeds x conditions`` episodes, judged, written as Parquet.

``python -m jeval_ray.sweep`` is the CLI (see ``--help`` and docs/sweep.md). From Python::

    from jeval_ray.sweep import load_sweep_config, run_sweep
    result = run_sweep(load_sweep_config("configs/local.yaml"), out="runs")
    print(result.run_dir)
"""

from jeval_ray.sweep.agents import make_model_agent
from jeval_ray.sweep.config import SweepConfig, json_schema, load_sweep_config, validate_config
from jeval_ray.sweep.driver import RunPlan, SweepDriver, SweepError, SweepResult, plan_run, run_sweep
from jeval_ray.sweep.grid import Cell, Grid

__all__ = ["Cell", "Grid", "RunPlan", "SweepConfig", "SweepDriver", "SweepError", "SweepResult", "json_schema",
           "load_sweep_config", "make_model_agent", "plan_run", "run_sweep", "validate_config"]
