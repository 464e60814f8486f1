"""Shapes shared by document chains: goods delivered in one lot or two, never more than ordered."""

from __future__ import annotations

import numpy as np

from jeval_ray.books import master as md, noise


def deliveries(g: np.random.Generator, qty: np.ndarray, first_day: np.ndarray, *, partial_rate: float,
               short_rate: float = 0.0, second_gap: tuple[int, int] = (5, 20),
               weekend_runs: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Deliveries against orders of ``qty``: (order index, day, quantity) of each delivery kept by
    year end, and the quantity delivered per order. A ``partial_rate`` share of orders come in two
    lots (the second ``second_gap`` days later); a ``short_rate`` share of those never complete."""
    n = len(qty)
    partial = (g.random(n) < partial_rate) & (qty >= 2)
    q1 = np.where(partial, np.maximum(1, (qty * g.uniform(0.4, 0.8, n)).astype(np.int64)), qty)
    rest = qty - q1
    short = partial & (g.random(n) < short_rate)
    q2 = np.where(partial, np.where(short, (rest * g.uniform(0.3, 0.9, n)).astype(np.int64), rest), 0)
    d1 = md.business_offset(first_day, 0)
    d2 = md.business_offset(d1 + g.integers(*second_gap, n), 0)
    if weekend_runs:
        d1, _ = noise.weekend(g, d1)
        d2, _ = noise.weekend(g, d2)
    two = np.flatnonzero(q2 > 0)
    order = np.concatenate([np.arange(n), two])
    day = np.concatenate([d1, d2[two]])
    q = np.concatenate([q1, q2[two]])
    keep = day <= md.YEAR_END
    return order[keep], day[keep], q[keep], {"partial": partial, "first": d1, "last": np.where(q2 > 0, d2, d1),
                                             "delivered": q1 + q2}
