"""Records: the Arrow schemas of steps, episodes, dispositions and judgments, and row builders."""

from jeval_ray.records.rows import (EpisodeKeys, dispositions_rows, dispositions_table, episode_id, episode_row,
                                    episodes_table, failed_episode_row, judgment_rows, judgments_table, skipped_episode_row, steps_rows,
                                    steps_table, table_from_ipc, table_to_ipc)
from jeval_ray.records.schemas import DATASETS, DISPOSITIONS, EPISODES, JUDGMENTS, KEYS, METRICS, PARTITION_COLUMNS, STEPS

__all__ = ["DATASETS", "DISPOSITIONS", "EPISODES", "EpisodeKeys", "JUDGMENTS", "KEYS", "METRICS", "PARTITION_COLUMNS",
           "STEPS", "dispositions_table", "episode_id", "episode_row", "episodes_table", "failed_episode_row", "skipped_episode_row",
           "judgment_rows", "judgments_table", "steps_table", "dispositions_rows", "steps_rows", "table_from_ipc",
           "table_to_ipc"]
