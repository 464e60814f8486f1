"""World generation: determinism, knobs, and the shape of the ledger."""

import json
import re
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from jeval_ray.errors import ConfigError, UnknownTaskError
from jeval_ray.tasks import available_tasks
from jeval_ray.world import generate_world

AVAILABLE = [t.id for t in available_tasks()]
LEDGER_FIELDS = {"entry_id", "line_no", "company", "account", "debit", "credit", "currency", "document_date",
                 "posting_date", "entry_timestamp", "preparer", "approver", "source", "document_type", "description",
                 "reference", "vendor_id"}

HASH_SCRIPT = """
import json, sys
from jeval_ray.tasks import available_tasks
from jeval_ray.world import generate_world
print(json.dumps({t.id: generate_world(t.id, 7, {"prompt_injection": True}).world_hash for t in available_tasks()}))
"""


def _hashes_in_subprocess(hashseed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    out = subprocess.run([sys.executable, "-c", HASH_SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_same_inputs_give_the_same_world_hash_across_processes_with_different_hash_seeds():
    a = _hashes_in_subprocess("1")
    b = _hashes_in_subprocess("12345")
    assert a == b
    assert set(a) == set(AVAILABLE)
    here = {t: generate_world(t, 7, {"prompt_injection": True}).world_hash for t in AVAILABLE}
    assert here == a


def test_listed_entries_carry_the_books_own_texts_lines_and_numbers_in_entry_time_order():
    """An unplanted entry is the books' entry: its reference is its document number and its
    description, lines and amounts are the ones the books posted; the closing entry comes last."""
    from jeval_ray.books import tables
    from jeval_ray.builder._base import books_for

    w = generate_world("JE-2", 4)
    books = books_for(4, w.knobs["n_entries"])
    j = tables.plain(books.journal)
    by_ref = {}
    for r in j.select(["reference", "description", "account", "debit_cents", "credit_cents", "document_type"]).to_pylist():
        by_ref.setdefault(r["reference"], []).append(r)
    planted = {d.entry_id for d in w.defects} | {d.entry_id for d in w.decoys}
    seen = 0
    for eid, rows in _group(w.ledger.to_pylist()).items():
        if eid in planted or rows[0]["document_type"] == "YC" or rows[0]["source"] == "manual":
            continue
        ref = by_ref[rows[0]["reference"]]
        assert rows[0]["description"] == ref[0]["description"]
        assert sorted((r["account"], round(r["debit"] * 100), round(r["credit"] * 100)) for r in rows) == \
            sorted((r["account"], r["debit_cents"], r["credit_cents"]) for r in ref)
        seen += 1
    assert seen > 300
    last = max(w.ledger.column("entry_id").to_pylist(), key=int)
    assert {r["document_type"] for r in w.ledger.to_pylist() if r["entry_id"] == last} == {"YC"}


def _group(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["entry_id"], []).append(r)
    return out


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_different_seeds_or_knobs_give_different_worlds(task_id):
    h0 = generate_world(task_id, 0).world_hash
    assert generate_world(task_id, 1).world_hash != h0
    assert generate_world(task_id, 0, {"noise_documents": 3}).world_hash != h0
    assert generate_world(task_id, 0).world_hash == h0


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_world_has_erp_ledger_master_data_documents_and_defect_ledger(task_id):
    w = generate_world(task_id, 3)
    assert LEDGER_FIELDS <= set(w.ledger.column_names)
    assert w.ledger.schema.field("entry_timestamp").type == pa.timestamp("s")
    assert {"accounts", "users", "vendors", "calendar"} <= set(w.master)
    assert w.documents and all(d.doc_id.startswith("DOC-") and d.body for d in w.documents)
    assert [d.doc_id for d in w.documents] == sorted(d.doc_id for d in w.documents)
    assert 3 <= len(w.defects) <= 8 or task_id in ("JE-13", "JE-15", "JE-16")
    visible = set(w.entry_ids) | set(w.hidden_entries)
    assert all(d.entry_id in visible for d in w.defects)
    assert all(d.entry_id in visible for d in w.decoys)
    assert not (w.defect_ids & {d.entry_id for d in w.decoys})


def test_n_entries_sizes_the_company_year_whose_fixed_runs_set_a_floor():
    """``n_entries`` sizes the simulated year; a year's payroll, depreciation, recurring bills and
    close make at least about 500 entries, so the small tiers' defaults give the smallest year."""
    small = generate_world("JE-2", 0)
    assert 450 <= small.n_entries <= 800
    big = generate_world("JE-2", 0, {"n_entries": 20_000}).n_entries
    assert 18_000 <= big <= 22_000


def test_defect_and_decoy_counts_follow_the_knobs():
    w = generate_world("JE-1", 0, {"n_defects": 5, "n_decoys": 2})
    assert len(w.defects) == 5 and len(w.decoys) == 2


@pytest.mark.parametrize("knobs, words", [
    ({"bogus": 1}, "unknown knob 'bogus'"),
    ({"n_entries": "many"}, "n_entries"),
    ({"n_entries": -5}, "n_entries"),
    ({"n_defects": 200, "n_decoys": 200}, "impossible knobs"),
    ({"near_miss": 2.0}, "near_miss"),
])
def test_bad_knobs_raise_a_config_error_naming_the_problem(knobs, words):
    with pytest.raises(ConfigError, match=words):
        generate_world("JE-1", 0, knobs)


def test_unknown_task_is_a_clear_error():
    with pytest.raises(UnknownTaskError, match="unknown task id 'JE-99'"):
        generate_world("JE-99", 0)


def _injected(body: str) -> bool:
    """Whether a document's text opens as one of the injected instructions (the builder's wording pool)."""
    from jeval_ray.builder import WorldBuilder

    return any(body.startswith(w.split("{entry}")[0]) for w in WorldBuilder._INJECTIONS)


def test_prompt_injection_knob_adds_a_document_and_is_recorded():
    plain = generate_world("JE-1", 0)
    inj = generate_world("JE-1", 0, {"prompt_injection": True})
    assert len(inj.documents) > len(plain.documents)
    assert inj.facts.get("prompt_injection") is True
    assert any(_injected(d.body) for d in inj.documents)
    assert not any(_injected(d.body) for d in plain.documents)


def test_every_entry_balances_and_only_planted_uploads_post_to_rounding_or_suspense():
    w = generate_world("JE-1", 4)
    led = w.ledger.to_pandas()
    sums = led.groupby("entry_id")[["debit", "credit"]].sum()
    assert ((sums.debit - sums.credit).abs() <= 0.005).all()
    # 7990 Rounding Differences and 2991 Suspense - GL Upload Differences, less the year-end close (YC) and the
    # journals that clear suspense items
    clearing = led.description.str.startswith("Suspense clearing")
    residuals = set(led.entry_id[led.account.isin(["7990", "2991"]) & (led.document_type != "YC") & ~clearing])
    assert residuals == w.defect_ids | {d.entry_id for d in w.decoys}
    assert led.account.eq("2991").any() and clearing.any()  # this world has suspense items, one cleared at least


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_trial_balance_has_one_row_per_account_and_rolls_forward_over_the_listing_and_gaps(task_id):
    w = generate_world(task_id, 2)
    bal = w.master["balances"].to_pylist()
    assert len({r["account"] for r in bal}) == len(bal)
    led = w.ledger.to_pandas()
    mov = (led.groupby("account").debit.sum() - led.groupby("account").credit.sum()).to_dict()
    off = {r["account"] for r in bal if abs(r["opening_balance"] + mov.get(r["account"], 0.0) - r["closing_balance"]) > 0.005}
    if w.hidden_entries:
        assert off, "an entry missing from the listing must show in the roll-forward"
    else:
        assert not off


def test_prompt_injection_never_names_an_entry_missing_from_the_listing():
    for seed in range(6):
        w = generate_world("JE-16", seed, {"prompt_injection": True})
        text = " ".join(d.body for d in w.documents if _injected(d.body))
        assert text and not any(h in text for h in w.hidden_entries)


#: words a generator must never write where the agent can read them
TELLTALES = re.compile(r"decoy|defect|planted|red flag|exception", re.I)


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_nothing_a_world_shows_names_what_was_planted(task_id):
    for seed in range(5):
        w = generate_world(task_id, seed)
        text = " ".join(f"{d.title} {d.body}" for d in w.documents)
        text += json.dumps({k: t.to_pylist() for k, t in w.master.items()}, default=str)
        text += " ".join(w.ledger["description"].unique().to_pylist())
        assert not TELLTALES.search(text), TELLTALES.search(text).group(0)
        for label in {d.defect_type for d in w.defects} | {d.decoy_type for d in w.decoys}:
            assert label not in text, label


# -- the world cache (episode workers share a world across the models and conditions of a cell) ---


def test_the_world_cache_returns_the_generated_world_again_for_the_same_task_seed_and_knobs():
    from jeval_ray.world import WorldCache

    cache = WorldCache(4)
    knobs = {"n_entries": 60, "n_defects": 2, "n_decoys": 2, "noise_documents": 1}
    w = cache.get("JE-1", 3, knobs)
    assert cache.get("JE-1", 3, dict(reversed(list(knobs.items())))) is w  # key order does not matter
    assert (cache.hits, cache.misses) == (1, 1)
    assert w.world_hash == generate_world("JE-1", 3, knobs).world_hash
    assert cache.get("JE-1", 4, knobs) is not w and cache.get("JE-1", 3, {**knobs, "n_decoys": 1}) is not w
    assert cache.get("JE-2", 3, knobs).task_id == "JE-2"
    assert (cache.hits, cache.misses, len(cache)) == (1, 4, 4)
    assert cache.fetch("JE-2", 3, knobs)[1] and not cache.fetch("JE-2", 5, knobs)[1]  # kept already, or just made


def test_the_world_cache_forgets_the_least_recently_used_world_first_and_capacity_0_keeps_none():
    from jeval_ray.world import WorldCache

    knobs = {"n_entries": 40, "n_defects": 1, "n_decoys": 1, "noise_documents": 0}
    cache = WorldCache(2)
    a, b = cache.get("JE-1", 0, knobs), cache.get("JE-1", 1, knobs)
    assert cache.get("JE-1", 0, knobs) is a  # 0 is now the most recent
    cache.get("JE-1", 2, knobs)  # evicts seed 1
    assert len(cache) == 2 and cache.get("JE-1", 0, knobs) is a and cache.get("JE-1", 1, knobs) is not b
    off = WorldCache(0)
    first = off.get("JE-1", 0, knobs)
    assert off.get("JE-1", 0, knobs) is not first and len(off) == 0 and off.hits == 0
    with pytest.raises(ValueError):
        WorldCache(-1)


def test_the_world_cache_keeps_at_most_max_entries_in_all_and_always_the_last_world():
    """Big worlds go first by entries, not count: a million-entry world holds about 0.45 GB."""
    from jeval_ray.world import WorldCache

    knobs = {"n_entries": 200, "n_defects": 1, "n_decoys": 1, "noise_documents": 0}
    one = generate_world("JE-1", 0, knobs).n_entries
    cache = WorldCache(16, max_entries=2 * one + one // 2)  # room for two such worlds, not three
    a, b = cache.get("JE-1", 0, knobs), cache.get("JE-1", 1, knobs)
    assert len(cache) == 2 and cache.entries == a.n_entries + b.n_entries
    cache.get("JE-1", 0, knobs)  # seed 0 is now the most recent
    c = cache.get("JE-1", 2, knobs)  # over the bound: the least recently used (seed 1) goes
    assert len(cache) == 2 and cache.entries == a.n_entries + c.n_entries
    assert cache.get("JE-1", 0, knobs) is a and cache.get("JE-1", 2, knobs) is c
    tiny = WorldCache(16, max_entries=1)  # smaller than any world: the last one is still kept
    w = tiny.get("JE-1", 0, knobs)
    assert tiny.get("JE-1", 0, knobs) is w and len(tiny) == 1 and tiny.hits == 1
    tiny.get("JE-1", 1, knobs)
    assert len(tiny) == 1 and tiny.entries == tiny.get("JE-1", 1, knobs).n_entries
    with pytest.raises(ValueError):
        WorldCache(4, max_entries=-1)


def test_an_episode_on_a_cached_world_plays_exactly_as_on_a_fresh_one():
    import asyncio

    from jeval_ray.agents import make_agent
    from jeval_ray.env import JEEnv
    from jeval_ray.episode import play_episode
    from jeval_ray.world import WorldCache

    cache = WorldCache(4)

    def play(worlds, withheld=()):
        env = JEEnv("JE-3", {"n_entries": 120}, withheld)
        out = asyncio.run(play_episode(env, make_agent("careful", 5), 5, worlds=worlds))
        return [(s.tool, s.args, s.observation, s.observation_hash, s.is_error) for s in out.steps], out.score, out.world_hash

    fresh = play(None)
    assert play(cache) == fresh and cache.misses == 1
    assert play(cache) == fresh and cache.hits == 1  # the second episode on the same world object
    assert play(cache, ("search_documents",))[2] == fresh[2] and cache.hits == 2  # a withheld tool: same world


def test_reset_refuses_a_prebuilt_world_of_another_seed_or_knobs():
    from jeval_ray.env import JEEnv

    w = generate_world("JE-1", 1, {"n_entries": 40, "n_defects": 1, "n_decoys": 1})
    with pytest.raises(ValueError, match="prebuilt world"):
        JEEnv("JE-1", {"n_entries": 40, "n_defects": 1, "n_decoys": 1}).reset(2, world=w)
    with pytest.raises(ValueError, match="prebuilt world"):
        JEEnv("JE-1", {"n_entries": 50, "n_defects": 1, "n_decoys": 1}).reset(1, world=w)
    brief, info = JEEnv("JE-1", {"n_entries": 40, "n_defects": 1, "n_decoys": 1}).reset(1, world=w)
    assert info["world_hash"] == w.world_hash


def test_year_cache_keeps_years_within_its_entry_bound_least_recently_used_first():
    """``books_for`` keeps many small years and few big ones: the bound is on entries (the last year
    asked for is always kept), then on the number of years; a kept year is the same object."""
    from jeval_ray.books import simulate_year
    from jeval_ray.builder._base import _YearCache

    sizes = [simulate_year(seed, 100).n_entries for seed in range(3)]
    cache = _YearCache(max_entries=sum(sizes) - 1, max_years=3)  # any two years fit, all three do not
    a = cache(0, 100)
    assert cache(0, 100) is a and (cache.hits, cache.misses) == (1, 1)
    cache(1, 100)
    assert len(cache) == 2 and cache.entries == sizes[0] + sizes[1]
    cache(0, 100)  # seed 0 used last: seed 1 is now the least recently used
    cache(2, 100)
    assert len(cache) == 2 and cache.entries == sizes[0] + sizes[2]
    assert cache(0, 100) is a and cache.misses == 3
    big = cache(3, 2_000)  # alone over the bound: kept, everything older dropped
    assert len(cache) == 1 and cache.entries == big.n_entries > cache.max_entries
    wide = _YearCache(max_entries=10**9, max_years=2)
    for seed in range(3):
        wide(seed, 100)
    assert len(wide) == 2 and wide.misses == 3
    wide(0, 100)
    assert wide.misses == 4  # seed 0 was dropped by the bound on years
    wide.cache_clear()
    assert len(wide) == 0 and wide.entries == 0


@pytest.mark.parametrize("task", ["JE-1", "JE-6", "JE-12"])
def test_description_quality_changes_descriptions_and_not_the_key(task):
    """The knob makes manual entries' texts terse; what the task plants is drawn the same."""
    for seed in range(3):
        clear, terse = generate_world(task, seed), generate_world(task, seed, {"description_quality": 0.2})
        assert [(d.entry_id, d.defect_type) for d in clear.defects] == [(d.entry_id, d.defect_type) for d in terse.defects]
        assert [(d.entry_id, d.decoy_type) for d in clear.decoys] == [(d.entry_id, d.decoy_type) for d in terse.decoys]
    assert clear.ledger.column("description") != terse.ledger.column("description")


def test_added_entries_build_no_text_column_nobody_reads():
    """``copy_entries`` and ``add_entries`` extend the columns a world owns at once and the year's others
    when first read: adding entries builds none of the year's text columns, and a column read later
    holds exactly the rows added (copies of their sources, new rows' values)."""
    import numpy as np

    from jeval_ray.tasks import get_task, resolve_knobs
    from jeval_ray.builder._base import WorldBuilder, year_entries

    b = WorldBuilder(get_task("JE-3"), 7_321, resolve_knobs("JE-3", {"n_entries": 1_234}))
    lazy = year_entries(b.books)["e"]
    n0 = b.n
    b.e["debit_cents"][4] += 100  # a column the world owns before the rows are added
    copies = b.copy_entries([4, 9])
    new = b.add_entries([{"doc_code": "TS", "post_date": np.datetime64("2025-06-30"), "entry_date": np.datetime64("2025-06-30"),
                          "time_s": 16 * 3600, "preparer": "HJOHANSSON", "approver": "IBROWN", "reference": "RCL-X",
                          "description": "Reclass", "lines": [("1000", 500), ("2000", -500)]}])
    again = b.copy_entries([int(new[0])])  # a copy of an added row
    assert not {"template", "preparer", "approver", "vendor_id", "customer_id"} & set(lazy._cache)
    assert list(copies) == [n0, n0 + 1] and list(new) == [n0 + 2] and list(again) == [n0 + 3]
    assert b.e["debit_cents"][n0] == b.e["debit_cents"][4] and b.e["debit_cents"][4] == lazy["debit_cents"][4] + 100
    prep = b.e["preparer"]  # built now, with the rows added
    assert len(prep) == n0 + 4
    assert prep[n0] == lazy["preparer"][4] and prep[n0 + 1] == lazy["preparer"][9]
    assert prep[n0 + 2] == prep[n0 + 3] == "HJOHANSSON"
    assert (prep[:n0] == lazy["preparer"]).all()
    assert b.e["reference"][n0 + 3] == "RCL-X" and b.e["reference"][n0] == b.e["reference"][4]
    # the listing's coded columns see the added rows without the text columns being built
    codes, vocab = b._grown_codes("approver", *year_entries(b.books)["codes"]["approver"])
    assert [vocab[c] for c in codes[n0:].tolist()] == [lazy["approver"][4], lazy["approver"][9], "IBROWN", "IBROWN"]


def test_world_generation_puts_its_memory_settings_back():
    """``generate_world`` turns numpy's huge-page advice off and takes Arrow's buffers from the system
    pool while it works, and restores both, also when generation fails on bad input."""
    import numpy as np

    from jeval_ray.world import world_memory

    setter = np._core.multiarray._set_madvise_hugepage
    pool = pa.default_memory_pool()
    before = setter(True)
    try:
        generate_world("JE-2", 0)
        assert setter(True) is True  # still on after a world
        assert pa.default_memory_pool().backend_name == pool.backend_name
        with pytest.raises(ConfigError):
            generate_world("JE-2", 0, {"n_defects": 200, "n_decoys": 200})  # impossible for the year: raised while building
        assert setter(False) is True  # and after a failure
        assert pa.default_memory_pool().backend_name == pool.backend_name
        generate_world("JE-2", 1)
        assert setter(False) is False  # off stays off
        with world_memory():
            assert pa.default_memory_pool().backend_name == "system" and setter(False) is False
            with world_memory():  # nested (another thread's world): the outer one puts things back
                pass
            assert pa.default_memory_pool().backend_name == "system"
        assert pa.default_memory_pool().backend_name == pool.backend_name
    finally:
        setter(before)


_REUSE = """
import resource
import jeval_ray.world as W
from jeval_ray.builder._base import books_for
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
faults = []
for seed in (0, 1, 2):
    books_for.cache_clear()  # each world simulates its year again, as a sweep worker does for a new seed
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    w = W.generate_world("JE-2", seed, {"n_entries": 200_000}); del w
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
books_for.cache_clear()
r0 = rss(); W.release_memory(); r1 = rss()
print(faults[0], faults[1], faults[2], r0, r1)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc and /proc")
def test_a_process_reuses_the_memory_of_its_last_world_until_released():
    """Worlds made one after another in a process reuse the memory of the last one instead of faulting
    it in again (before: each later world of 200,000 entries faulted in about a third of the first's
    pages; now under 6 %), and ``release_memory`` hands the kept memory back."""
    out = subprocess.run([sys.executable, "-c", _REUSE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    first, second, third, rss_kept, rss_released = map(int, out.stdout.split())
    assert second < 0.15 * first and third < 0.15 * first, (first, second, third)
    assert rss_released < rss_kept - 150 * 2**20, (rss_kept, rss_released)
