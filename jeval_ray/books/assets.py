"""Fixed assets: the register and its monthly straight-line depreciation run.

The register holds the assets in service at the start of the year (from master data) and every
piece of production equipment received during the simulation (one asset per goods receipt). An
asset depreciates from the month after it is received, in equal monthly instalments over its
useful life (the last instalment takes the rounding), to nil. The depreciation run posts once a
month, on the last day, for the whole register; its amount is the register's month column, so
cost - accumulated depreciation = net book value holds asset by asset and in the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.documents import DocBuilder

_MACHINERY = 1


@dataclass(frozen=True, eq=False)
class Register:
    asset_class: np.ndarray
    cost: np.ndarray
    acquired: np.ndarray  # day number (receipt or original acquisition)
    in_service_month: np.ndarray  # months since 1970-01 of the first depreciation month
    life: np.ndarray  # months
    vendor: np.ndarray
    receipt: np.ndarray  # goods receipt document id, -1 for assets from before the simulation

    def depreciation(self, month: int) -> np.ndarray:
        """Each asset's depreciation for one month (months since 1970-01)."""
        j = month - self.in_service_month
        base = self.cost // self.life
        last = self.cost - base * (self.life - 1)
        return np.where((j >= 0) & (j < self.life), np.where(j == self.life - 1, last, base), 0)

    def accumulated(self, through_month: int) -> np.ndarray:
        """Accumulated depreciation through the end of a month."""
        n = np.clip(through_month - self.in_service_month + 1, 0, self.life)
        base = self.cost // self.life
        return base * n + np.where(n == self.life, self.cost - base * self.life, 0)


def _month_number(days: np.ndarray) -> np.ndarray:
    return np.asarray(days, dtype=np.int64).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)


def build_register(m: md.Master, receipts: dict) -> Register:
    life = np.array([c[1] for c in md.ASSET_CLASSES])
    k = len(receipts["gr_ids"])
    return Register(
        asset_class=np.concatenate([m.asset_class, np.full(k, _MACHINERY)]),
        cost=np.concatenate([m.asset_cost, receipts["gr_amount"]]),
        acquired=np.concatenate([m.asset_in_service - 1, receipts["gr_day"]]),
        in_service_month=np.concatenate([_month_number(m.asset_in_service), _month_number(receipts["gr_day"]) + 1]),
        life=np.concatenate([life[m.asset_class], np.full(k, life[_MACHINERY])]),
        vendor=np.concatenate([m.asset_vendor, receipts["gr_vendor"]]),
        receipt=np.concatenate([m.asset_acquired_by, receipts["gr_ids"]]),
    )


FIRST_MONTH = int(_month_number(np.array([md.YEAR_START]))[0])


def depreciation_runs(b: DocBuilder, g: np.random.Generator, reg: Register) -> np.ndarray:
    months = FIRST_MONTH + np.arange(12)
    amount = np.array([int(reg.depreciation(int(mo))[reg.acquired <= md.MONTH_ENDS[i]].sum())
                       for i, mo in enumerate(months)], dtype=np.int64)
    return b.add("DP", 12, doc_date=md.MONTH_ENDS, post_date=md.MONTH_ENDS, entry_date=md.MONTH_ENDS,
                 entry_time=md.night_batch(g, 12), amount=amount, preparer=md.USER["SYS_BATCH"],
                 service_month=md.fiscal_month_code(md.MONTH_ENDS))


def opening(reg: Register) -> tuple[int, int]:
    """(cost, accumulated depreciation) of the assets held at the start of the year."""
    held = reg.acquired < md.YEAR_START
    return int(reg.cost[held].sum()), int(reg.accumulated(FIRST_MONTH - 1)[held].sum())
