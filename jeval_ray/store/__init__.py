"""Store: the sweep run's Parquet datasets (writer) and the readers that apply the dedup rule.

See ``writer`` for the layout and write guarantees and ``reader`` for the dedup rule.
"""

from jeval_ray._fs import resolve_fs
from jeval_ray.store.reader import (dedup, episode_progress, kept_attempts, open_dataset, partitioning, read_dataset,
                                    read_raw, read_run)
from jeval_ray.store.writer import RunWriter, partition_dir, write_json_atomic

__all__ = ["RunWriter", "dedup", "episode_progress", "kept_attempts", "open_dataset", "partition_dir", "partitioning",
           "read_dataset", "read_raw", "read_run", "resolve_fs", "write_json_atomic"]
