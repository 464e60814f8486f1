"""A company that could exist (issue 29, point 6): one state for every address of the company, and
economics an auditor would not open with a going-concern question.

The addresses are listed from what a world shows: the documents of several tasks (invoices with
their delivery addresses, delivery notes, memos, contracts) and the master data (the vendor master's
address changes). Every ``City, ST`` address found must be in the company's state and every site
named in passing ("the Denver plant") must be in a city of the company's addresses. The economics
are asserted on the books' smallest year and on the largest task default (2,000 entries), on a
modest number of seeds; ``bench/bench_company.py`` measures the same figures
over 200 seeds.
"""

from __future__ import annotations

import re

import pytest

from jeval_ray.books import master as md, simulate_year
from jeval_ray.books.economics import figures
from jeval_ray.world import generate_world

_STATES = ("AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH "
           "OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY").split()
#: ``..., City, ST`` or ``..., City ST`` with an optional ZIP code
ADDRESS = re.compile(r"(?:^|,\s*)([A-Z][a-z]+(?: [A-Z][a-z]+)*),? (" + "|".join(_STATES) + r")\b(?: \d{5})?")
#: a site named in passing: "the Denver plant", "at the Commerce City site"
SITE = re.compile(r"\b(?:the|The) ((?:[A-Z][a-z]+ ){1,2})(plant|warehouse|office|site|factory)\b")
#: tasks whose documents name the company's sites, vendors' addresses or the company's memos
TASKS = ("JE-5", "JE-7", "JE-8", "JE-9", "JE-10", "JE-11", "JE-15")


def addresses(world) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(city, state, where) of every address and (city, where) of every site named in ``world``."""
    texts = [(d.body, f"{world.task_id} {d.doc_id}") for d in world.documents]
    texts += [(f"{d.title}\n", f"{world.task_id} {d.doc_id} title") for d in world.documents]
    changes = world.master.get("vendor_changes")
    for row in (changes.to_pylist() if hasattr(changes, "to_pylist") else changes or []):
        if row["field"] == "remit_address":
            texts += [(str(row[k]), f"{world.task_id} vendor_changes {row['vendor_id']}") for k in ("old_value", "new_value")]
    found, sites = [], []
    for text, where in texts:
        for line in text.splitlines():
            found += [(m.group(1), m.group(2), where) for m in ADDRESS.finditer(line)]
            sites += [(m.group(1).strip(), where) for m in SITE.finditer(line)]
    return found, sites


def _city(address: str) -> str:
    return address.rsplit(", ", 2)[-2]


COMPANY_CITIES = {_city(a) for a in (*md.SITES, *md.VENDOR_ADDRESSES)}


def test_the_company_addresses_are_all_in_its_state():
    assert md.STATE == "CO"
    for a in (*md.SITES, *md.VENDOR_ADDRESSES):
        assert a.rsplit(", ", 1)[-1].split()[0] == md.STATE, a


@pytest.mark.parametrize("task_id", TASKS)
def test_every_address_a_world_shows_is_in_the_company_state(task_id):
    listed, named = [], []
    for seed in (0, 3, 40001):
        a, s = addresses(generate_world(task_id, seed))
        listed += a
        named += s
    states = {st for _, st, _ in listed}
    assert states <= {md.STATE}, [x for x in listed if x[1] != md.STATE][:5]
    off = [(c, w) for c, w in named if c not in COMPANY_CITIES]
    assert not off, off[:5]
    # the listing is not empty where the task writes addresses (so the test cannot pass by finding none)
    if task_id in ("JE-7", "JE-9", "JE-15"):
        assert listed, f"{task_id}: no address found"
    if task_id in ("JE-5", "JE-8", "JE-10", "JE-11"):
        assert listed or named, f"{task_id}: no site found"


def test_the_address_listing_sees_an_address_in_another_state():
    """The patterns catch what the issue found: an Ohio warehouse, a Reno plant."""
    doc = "Shipper: Northwind Components Inc., finished goods warehouse, Columbus OH\nrepairs at the Reno plant"
    listed = [m.group(2) for m in ADDRESS.finditer(doc.splitlines()[0])]
    named = [m.group(1).strip() for m in SITE.finditer(doc.splitlines()[1])]
    assert listed == ["OH"] and named == ["Reno"] and "Reno" not in COMPANY_CITIES


@pytest.mark.parametrize("size,seeds", [(100, range(40000, 40020)), (2000, range(40000, 40004))])
def test_the_company_is_profitable_solvent_and_liquid(size, seeds):
    for seed in seeds:
        f = figures(simulate_year(seed, size))
        assert f["revenue"] >= 5_000_000, (seed, f)
        assert f["net_income"] > 0, (seed, f)
        assert f["equity"] > 0, (seed, f)
        assert f["low_book"] >= 0 and f["low_bank"] >= 0, (seed, f)
        assert f["year_end_cash"] >= f["month_opex"], (seed, f)
