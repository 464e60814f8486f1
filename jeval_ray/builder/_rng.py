"""The world's seeded streams (defined in ``jeval_ray._rng``, which the books share without importing the world)."""

from jeval_ray._rng import rng_for, stable_int

__all__ = ["rng_for", "stable_int"]
