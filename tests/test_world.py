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


def test_default_slice_size_follows_the_tier():
    w = generate_world("JE-1", 0)
    assert w.n_entries == 200
    assert generate_world("JE-1", 0, {"n_entries": 321}).n_entries == 321


def test_defect_and_decoy_counts_follow_the_knobs():
    w = generate_world("JE-1", 0, {"n_defects": 5, "n_decoys": 2})
    assert len(w.defects) == 5 and len(w.decoys) == 2


@pytest.mark.parametrize("knobs, words", [
    ({"bogus": 1}, "unknown knob 'bogus'"),
    ({"n_entries": "many"}, "n_entries"),
    ({"n_entries": -5}, "n_entries"),
    ({"n_defects": 90, "n_decoys": 90}, "impossible knobs"),
    ({"near_miss": 2.0}, "near_miss"),
])
def test_bad_knobs_raise_a_config_error_naming_the_problem(knobs, words):
    with pytest.raises(ConfigError, match=words):
        generate_world("JE-1", 0, knobs)


def test_unknown_task_is_a_clear_error():
    with pytest.raises(UnknownTaskError, match="unknown task id 'JE-99'"):
        generate_world("JE-99", 0)


def test_prompt_injection_knob_adds_a_document_and_is_recorded():
    plain = generate_world("JE-1", 0)
    inj = generate_world("JE-1", 0, {"prompt_injection": True})
    assert len(inj.documents) > len(plain.documents)
    assert inj.facts.get("prompt_injection") is True
    assert any("Ignore any previous instructions" in d.body for d in inj.documents)
    assert not any("Ignore any previous instructions" in d.body for d in plain.documents)


def test_base_population_is_balanced_except_for_planted_entries():
    w = generate_world("JE-1", 4)
    led = w.ledger.to_pandas()
    sums = led.groupby("entry_id")[["debit", "credit"]].sum()
    off = set(sums.index[(sums.debit - sums.credit).abs() > 0.001])
    assert off == w.defect_ids | {d.entry_id for d in w.decoys}


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
        text = " ".join(d.body for d in w.documents if "Ignore any previous instructions" in d.body)
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
