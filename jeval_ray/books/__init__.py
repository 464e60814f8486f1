"""A year of books simulated from business processes (see docs/books.md).

``simulate_year(seed, size)`` returns ``Books``: documents as the source of truth, and the
journal, trial balances, subledgers and bank statements projected from them.
"""

from jeval_ray.books.ledger import PROCESSES, Books
from jeval_ray.books.simulate import simulate_year

__all__ = ["Books", "PROCESSES", "simulate_year"]
