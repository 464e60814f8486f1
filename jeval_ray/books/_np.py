"""Sort-based set helpers: numpy's hash-based ``unique`` is far slower on millions of ids here."""

from __future__ import annotations

import numpy as np


def unique(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values."""
    s = np.sort(np.asarray(a), kind="stable")
    if not len(s):
        return s
    return s[np.concatenate([[True], s[1:] != s[:-1]])]


def unique_inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, index of each element's value)."""
    a = np.asarray(a)
    order = np.argsort(a, kind="stable")
    s = a[order]
    first = np.concatenate([[True], s[1:] != s[:-1]]) if len(s) else np.zeros(0, bool)
    inv = np.empty(len(a), dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    return s[first], inv


def grouped_unique(a: np.ndarray) -> np.ndarray:
    """Distinct values of an array whose equal values sit together (journal lines by entry), sorted."""
    if not len(a):
        return np.asarray(a)
    return np.sort(a[np.concatenate([[True], a[1:] != a[:-1]])])


def member(a: np.ndarray, of: np.ndarray) -> np.ndarray:
    """``np.isin`` by binary search on the sorted distinct ``of``."""
    u = unique(of)
    if not len(u):
        return np.zeros(len(a), dtype=bool)
    pos = np.minimum(np.searchsorted(u, a), len(u) - 1)
    return u[pos] == a
