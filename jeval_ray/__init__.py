"""jeval_ray: journal-entry testing benchmark for LLM auditor agents, with a Ray sweep runner.

The folders read as the pipeline: ``tasks`` -> ``world`` -> ``env`` (tools) -> ``agents`` /
``models`` -> ``runner`` (Ray) -> ``scoring`` -> ``records`` (Parquet) -> ``report``.
"""

__version__ = "0.1.0"

from jeval_ray.errors import ConfigError, JEvalError, UnknownTaskError, TaskNotAvailableError

__all__ = ["__version__", "ConfigError", "JEvalError", "UnknownTaskError", "TaskNotAvailableError"]
