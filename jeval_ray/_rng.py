"""Deterministic random streams: a stable (sha256) hash of the task id, seed and stream name."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_int(*parts: object) -> int:
    """A 128-bit integer from the sha256 of the parts' text; never Python's ``hash()``."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:16], "big")


def rng_for(task_id: str, seed: int, stream: str = "world") -> np.random.Generator:
    """A PCG64 generator seeded from ``SeedSequence(sha256(task_id, seed, stream))``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(stable_int(task_id, seed, stream))))
