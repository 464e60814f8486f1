"""Draws: defects, decoys and ordinary entries come from one pool, and roles are assigned after.

A plant picks its candidates from one pool (``WorldBuilder.pick`` over one mask: the same kinds,
dates, amounts and texts), then assigns each the role of defect or decoy at random. Nothing in an
entry's surface then says which it is; only the evidence does. These helpers draw the roles from
the builder's seeded stream (``b.rng``), in the order the books' worlds were pinned with, so a task
moved onto them keeps its world.
"""

from __future__ import annotations

import numpy as np


def roles(n_defects: int, n_decoys: int, rng: np.random.Generator) -> list[bool]:
    """``n_defects + n_decoys`` roles in a random order: ``True`` for a defect, ``False`` for a decoy
    (one permutation drawn from ``rng``)."""
    k = n_defects + n_decoys
    order = np.array([1] * n_defects + [0] * n_decoys)[rng.permutation(k)]
    return [bool(r) for r in order]


def split_in_groups(n: int, rng: np.random.Generator, least: int) -> list[int]:
    """Split ``n`` entries into groups of ``least`` or ``least + 1`` (entries sharing a user, an
    account, a document): a group is all defects or all decoys, so no order within it gives the key away."""
    out = []
    while n > 0:
        g = min(n, int(rng.integers(least, least + 2)))
        out.append(g)
        n -= g
    return out


def grouped_roles(n_defects: int, n_decoys: int, rng: np.random.Generator, least: int) -> list[tuple[int, bool]]:
    """Groups of defects and groups of decoys (sizes from ``split_in_groups``), shuffled together:
    ``[(size, is_defect), ...]``."""
    groups = [(g, True) for g in split_in_groups(n_defects, rng, least)]
    groups += [(g, False) for g in split_in_groups(n_decoys, rng, least)]
    return [groups[i] for i in rng.permutation(len(groups))]


__all__ = ["grouped_roles", "roles", "split_in_groups"]
