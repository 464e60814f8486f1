"""The task contract: what every available task of the catalogue promises, whatever it plants.

One suite, parametrised over the registry (``available_tasks()``), so a task is covered by
registering it. Per-task files (``test_task_jeNN.py``) keep only what is specific to their task;
``docs/notes/contract_suite.md`` lists the per-task tests this suite replaced.

* determinism: the same (task, seed, knobs) gives the same ``world_hash``; another seed or other knobs another;
* surface parity: on the listing's columns defects and decoys come from one distribution, and the
  naive agent (the task's stated surface rule) flags every one of them;
* no labels in visible text: no documents, listing text, master data or brief names the key;
* decisive facts present: every fact of the key is stated in the evidence it needs, as the tools show it;
* solvability and budget: the careful agent submits within the step budget with outcome >= 0.95;
* naive discriminates: careful beats naive by at least 0.15;
* the withheld variant: the withheld tools are gone and careful still solves the task;
* paged: careful solves the task with every result paged to the LLM agent's default 20,000 characters.

Worlds are generated once per (task, seed) and every episode is played once, in process, with the
episode API (``play_episode``) on the cached world (``tests/support/worlds.py``, shared with the
per-task modules).
"""

from __future__ import annotations

import collections
import math
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from jeval_ray.env import JEEnv
from jeval_ray.scoring.judge import fact_stated
from jeval_ray.scoring.verifier import needed_evidence
from jeval_ray.tasks import available_tasks, get_task, register, task_value
from jeval_ray.world import generate_world
from support import demo_task
from support.worlds import played, world as cached_world

#: every available task of the catalogue, and the kit's acceptance task (tests/support/demo_task.py: a task
#: written with the task kit alone, registered here), which must pass the same contract
TASKS = [t.id for t in available_tasks()] + [register(demo_task.TASK).id]
#: worlds whose text and key are checked one by one
WORLD_SEEDS = range(5)
#: worlds pooled for the surface-parity statistics (about 170 defects and as many decoys a task)
PARITY_SEEDS = range(30)
#: seeds the built-in agents play (the tasks' tuned seeds 0-4 and a held-out one)
PLAY_SEEDS = (0, 1, 2, 3, 4, 500)
#: seeds careful plays with the task's withheld-tool variant
WITHHELD_SEEDS = (1, 500)
#: words that name the key, nowhere an agent can read (a defect or decoy type's own name is checked too) ...
TELLTALES = re.compile(r"decoy|defect|planted|red.flag|held.out", re.I)
#: ... and words of an auditor's verdict, which the brief may use but no document, listing row or master row may
VERDICTS = re.compile(r"exception|anomal|fraud|mismatch|unsupported|shell", re.I)
#: listing features compared between defects and decoys: categorical (total variation distance) and ordered (rank AUC)
MAX_TVD = 0.25
AUC_BAND = (0.35, 0.65)
#: the amount, the column every surface rule and listing classifier reads first, is held to a tighter band
AMOUNT_AUC_BAND = (0.4, 0.6)


def task(task_id: str):
    """The task as this suite reads it: its registered ``Task`` value."""
    return task_value(task_id)


# ---------------------------------------------------------------------------- shared worlds and plays
@pytest.fixture(scope="module")
def worlds():
    """(task, seed, knobs) -> World, each generated once (the process-wide ``support.worlds`` cache,
    which the per-task modules read too); ``keep=False`` for a parity sweep's other seeds."""
    return cached_world


@pytest.fixture(scope="module")
def plays():
    """(task, agent, seed, withheld) -> EpisodeOutcome, each played once, in process, with the episode
    API on the cached world (``support.worlds.played``, shared with the per-task modules)."""
    return played


def _planted(world) -> dict[str, bool]:
    """Entry id -> is a defect, for every planted entry of the listing (a missing entry is not in it)."""
    out = {d.entry_id: True for d in world.defects} | {d.entry_id: False for d in world.decoys}
    return {k: v for k, v in out.items() if k not in world.hidden_entries}


def _records(world):
    return (*world.defects, *world.decoys)


# ---------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("task_id", TASKS)
def test_the_same_task_seed_and_knobs_give_the_same_world(task_id, worlds):
    first = worlds(task_id, 0)
    again = generate_world(task_id, 0)
    assert again.world_hash == first.world_hash and again.defects == first.defects and again.decoys == first.decoys
    assert again.documents == first.documents and again.ledger.equals(first.ledger)
    hashes = {worlds(task_id, s).world_hash for s in WORLD_SEEDS}
    hashes.add(generate_world(task_id, 0, {"n_defects": 4, "n_decoys": 4}).world_hash)
    assert len(hashes) == len(WORLD_SEEDS) + 1, "another seed or other knobs must give another world"


# ---------------------------------------------------------------------------- surface parity
def _auc(a: list[float], b: list[float]) -> float:
    """P(a draw of ``a`` > a draw of ``b``), ties counting half (the rank AUC)."""
    ordered = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks, i = {}, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        ranks[ordered[i][0]] = (i + j + 1) / 2
        i = j
    return (sum(ranks[x] for x in a) - len(a) * (len(a) + 1) / 2) / (len(a) * len(b))


def _tvd(a: list, b: list) -> float:
    ca, cb = collections.Counter(a), collections.Counter(b)
    return 0.5 * sum(abs(ca[k] / len(a) - cb[k] / len(b)) for k in ca.keys() | cb.keys())


def _listing_features(world) -> dict[str, dict[str, object]]:
    """Entry id -> what the listing shows of a planted entry: header columns, first line's account,
    line count, amount, imbalance and the dates' and times' shape."""
    planted = _planted(world)
    led = world.ledger
    rows = led.filter(pc.is_in(led["entry_id"], value_set=pa.array(sorted(planted)))).to_pylist()
    heads: dict[str, dict] = {}
    for r in rows:
        h = heads.setdefault(r["entry_id"], {**r, "debits": 0.0, "credits": 0.0, "lines": 0})
        h["debits"] += r["debit"]
        h["credits"] += r["credit"]
        h["lines"] += 1
    out = {}
    for eid, h in heads.items():
        ts = h["entry_timestamp"]
        out[eid] = {
            "document_type": h["document_type"], "source": h["source"], "preparer": h["preparer"],
            "approver": h["approver"], "reference_prefix": h["reference"].split("-")[0], "account": h["account"],
            "vendor": bool(h["vendor_id"]), "weekday": ts.weekday(),
            "lines": h["lines"], "log_amount": math.log10(max(h["debits"], 0.01)),
            "imbalance": round(abs(h["debits"] - h["credits"]), 2), "posting_month": h["posting_date"].month,
            "recording_lag": (ts.date() - h["posting_date"]).days, "hour": ts.hour + ts.minute / 60,
        }
    return out


ORDERED = ("lines", "log_amount", "imbalance", "posting_month", "recording_lag", "hour")


@pytest.mark.parametrize("task_id", TASKS)
def test_defects_and_decoys_share_one_listing_surface(task_id, worlds):
    """Pooled over 30 worlds, no listing column tells a defect from a decoy: categorical columns within
    0.25 total variation distance, ordered ones (imbalance, posting month, recording lag, hour, line
    count) at a rank AUC within 0.35-0.65 and the amount within 0.4-0.6 (tests/test_adversarial.py
    trains a classifier on the whole listing)."""
    feats: dict[bool, dict[str, list]] = {True: collections.defaultdict(list), False: collections.defaultdict(list)}
    for s in PARITY_SEEDS:
        w = worlds(task_id, s, keep=s in WORLD_SEEDS or s in PLAY_SEEDS)
        planted = _planted(w)
        for eid, f in _listing_features(w).items():
            for k, v in f.items():
                feats[planted[eid]][k].append(v)
    n = {bad: len(feats[bad]["source"]) for bad in (True, False)}
    assert min(n.values()) >= 60, n
    off = {}
    for k in feats[True]:
        if k in ORDERED:
            v = _auc(feats[True][k], feats[False][k])
            lo, hi = AMOUNT_AUC_BAND if k == "log_amount" else AUC_BAND
            if not lo <= v <= hi:
                off[k] = round(v, 3)
        elif (v := _tvd(feats[True][k], feats[False][k])) > MAX_TVD:
            off[k] = round(v, 3)
    assert not off, f"{task_id}: the listing separates defects from decoys on {off}"


@pytest.mark.parametrize("task_id", TASKS)
def test_the_naive_surface_rule_flags_every_defect_and_every_decoy(task_id, plays, worlds):
    """The naive agent applies the task's surface rule without reading the evidence: it flags every
    planted entry of the listing, so on the surface a decoy is a defect."""
    for s in PLAY_SEEDS:
        w = worlds(task_id, s)
        o = plays(task_id, "naive", s)
        flagged = {d["entry_id"] for d in o.dispositions if d["is_final"] and d["decision"] == "flag"}
        assert not set(_planted(w)) - flagged, (task_id, s, sorted(set(_planted(w)) - flagged))
        assert o.score.verification.fp >= len(w.decoys), (task_id, s)


# ---------------------------------------------------------------------------- no labels in visible text
def _visible_text(world, brief: str) -> list[tuple[str, str]]:
    """(where, text) of everything an agent can read: the brief, the documents, the listing's text
    columns and the master data."""
    out = [("brief", brief)] + [(d.doc_id, f"{d.doc_type} {d.title}\n{d.body}") for d in world.documents]
    for name, table in [("ledger", world.ledger), *((f"master:{k}", t) for k, t in world.master.items())]:
        for col in table.column_names:
            if pa.types.is_string(table.schema.field(col).type) or pa.types.is_dictionary(table.schema.field(col).type):
                values = pc.unique(table.column(col).cast(pa.string())).to_pylist()
                out.append((f"{name}.{col}", " | ".join(sorted(str(v) for v in values if v))))
    return out


@pytest.mark.parametrize("task_id", TASKS)
def test_no_labels_in_visible_text(task_id, worlds):
    for s in WORLD_SEEDS:
        w = worlds(task_id, s)
        brief, _ = JEEnv(task_id).reset(s, world=w)
        types = {d.defect_type for d in w.defects} | {d.decoy_type for d in w.decoys}
        for where, text in _visible_text(w, brief):
            m = TELLTALES.search(text) or (VERDICTS.search(text) if where != "brief" else None)
            assert m is None, (task_id, s, where, text[max(0, m.start() - 80):m.end() + 80])
            named = [t for t in types if re.search(rf"\b{re.escape(t)}\b", text)]
            assert not named, (task_id, s, where, named)


# ---------------------------------------------------------------------------- decisive facts
def _read(env: JEEnv, evidence_id: str, world) -> str:
    """The text the tools show for one piece of evidence (a document, a master table, an entry)."""
    if evidence_id.startswith("DOC-"):
        calls = [("open_document", {"doc_id": evidence_id})]
    elif evidence_id == "master:balances":
        calls = [("get_balances", {})]
    elif evidence_id.startswith("master:"):
        n = world.master[evidence_id.split(":", 1)[1]].num_rows
        calls = [("get_master_data", {"table": evidence_id.split(":", 1)[1], "limit": 500, "offset": off})
                 for off in range(0, max(n, 1), 500)]
    else:
        calls = [("get_entry", {"entry_id": evidence_id})]
    texts = []
    for tool, args in calls:
        text, *_, info = env.step({"tool": tool, "args": args})
        assert not info["is_error"], (evidence_id, text)
        texts.append(text)
    # a timestamp shows its day: 2025-03-05T18:02:11 states the date 2025-03-05
    return re.sub(r"(\d{4}-\d\d-\d\d)T(?=\d)", r"\1 ", "\n".join(texts))


def _derived(fact: str, rec, text: str) -> bool:
    """A figure the evidence implies rather than prints: the defect's misstatement (what the agent is
    asked to quantify), or a percentage the evidence states of a figure it states (a tolerance, to the
    cent, rounded either way: "no more than 3%" of 3,020.64 allows 90.61)."""
    if not re.fullmatch(r"-?\d[\d,]*\.\d+", fact):
        return False
    v = float(fact.replace(",", ""))
    if abs(getattr(rec, "misstatement", math.nan) - v) < 0.005:
        return True
    figures = {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}
    percents = {float(p) for p in re.findall(r"(\d+(?:\.\d+)?)\s?%", text)}
    return any(abs(p / 100 * x - v) < 0.01 for p in percents for x in figures)


@pytest.mark.parametrize("task_id", TASKS)
def test_decisive_facts_are_stated_in_the_needed_evidence(task_id, worlds):
    """Every planted entry has decisive facts, and each is stated in the evidence it needs (or in the
    entry), read through the agent's tools: a figure to the cent, a date, an id, a name or a word.
    Exceptions: an entry id of the listing (another posting the facts point to), the id of a
    missing entry (the gap in the numbering shows it), and a derived figure (``_derived``)."""
    for s in WORLD_SEEDS:
        w = worlds(task_id, s)
        env = JEEnv(task_id, step_budget=100_000)
        env.reset(s, world=w)
        listing = set(w.entry_ids)
        for rec in _records(w):
            assert rec.facts, (task_id, s, rec.entry_id)
            evidence = list(needed_evidence(w, rec.entry_id))
            if rec.entry_id in listing:
                evidence.append(rec.entry_id)
            text = "\n".join(_read(env, e, w) for e in dict.fromkeys(evidence))
            missing = [f for f in rec.facts if not (fact_stated(f, text) or f in listing or f == rec.entry_id
                                                     or _derived(f, rec, text))]
            assert not missing, (task_id, s, rec.entry_id, missing)


# ---------------------------------------------------------------------------- the built-in agents
@pytest.mark.parametrize("task_id", TASKS)
def test_careful_solves_the_task_within_the_step_budget(task_id, plays):
    """The reference solver reads the evidence and submits before the budget runs out: outcome at least
    0.95 (and no planted entry decided wrongly: no false positive or negative, every criteria code
    right), rationale and process
    at least 0.95, every needed piece of evidence opened, the misstatement right where the task asks
    for it, nothing fabricated and no entry disposed of before its evidence was read."""
    budget = get_task(task_id).step_budget
    for s in PLAY_SEEDS:
        o = plays(task_id, "careful", s)
        v = o.score.verification
        assert o.termination == "submitted" and len(o.steps) <= budget, (task_id, s, o.termination, len(o.steps))
        assert o.score.outcome >= 0.95 and v.fp == 0 and v.fn == 0 and v.criteria_accuracy == 1.0, (task_id, s, v)
        assert o.score.rationale >= 0.95 and o.score.process >= 0.95, (task_id, s, o.score)
        assert v.evidence_coverage == 1.0 and (v.misstatement_error or 0.0) < 1e-6, (task_id, s, v)
        assert v.fabrications == 0 and v.premature_disposition == 0, (task_id, s, v)


@pytest.mark.parametrize("task_id", TASKS)
def test_careful_beats_the_naive_surface_rule(task_id, plays):
    """The task states both procedures, and on every seed careful scores at least 0.15 above naive,
    whose flagged decoys hold its outcome to at most 0.6 (random < naive < careful is
    tests/test_adversarial.py's)."""
    assert callable(task(task_id).careful) and callable(task(task_id).naive), task_id
    for s in PLAY_SEEDS:
        careful, naive = plays(task_id, "careful", s).score, plays(task_id, "naive", s).score
        assert careful.score - naive.score >= 0.15, (task_id, s, careful.score, naive.score)
        assert naive.outcome <= 0.6, (task_id, s, naive.outcome)


@pytest.mark.parametrize("task_id", TASKS)
def test_the_withheld_variant_removes_its_tools_and_careful_still_solves(task_id, plays):
    spec = get_task(task_id)
    withheld = tuple(spec.withheld_variant)
    assert withheld, f"{task_id} documents no withheld-tool variant"
    env = JEEnv(task_id, tools_withheld=withheld)
    names = {schema["function"]["name"] for schema in env.tool_schemas}
    assert not names & set(withheld) and names == set(spec.tools) - set(withheld)
    for s in WITHHELD_SEEDS:
        o = plays(task_id, "careful", s, withheld)
        assert not {st.tool for st in o.steps} & set(withheld), (task_id, s)
        assert o.termination == "submitted" and len(o.steps) <= spec.step_budget, (task_id, s)
        assert o.score.outcome >= 0.95 and o.score.rationale >= 0.95, (task_id, s, o.score)


#: the LLM agent's default observation budget: the environment pages every result to it
PAGED_CHARS = 20_000
#: seeds careful plays paged (one tuned, one held out)
PAGED_SEEDS = (1, 500)


@pytest.mark.parametrize("task_id", TASKS)
def test_careful_solves_the_task_paged_as_a_model_sees_it(task_id, plays):
    """Played as a model plays it, every result paged to the LLM agent's default 20,000 characters (each
    page a call), careful still submits within the step budget with outcome >= 0.95."""
    budget = get_task(task_id).step_budget
    for seed in PAGED_SEEDS:
        out = plays(task_id, "careful", seed, (), PAGED_CHARS)
        sc = out.score
        assert out.steps and out.steps[-1].tool == "submit", f"{task_id} seed {seed}: careful never submitted"
        assert len(out.steps) <= budget, (task_id, seed, len(out.steps), budget)
        assert sc.outcome >= 0.95, f"{task_id} seed {seed}: outcome {sc.outcome:.3f} paged at {PAGED_CHARS:,} chars"


@pytest.mark.parametrize("task_id", TASKS)
def test_the_step_budget_leaves_room_to_think(task_id, plays):
    """A task's budget is at least 1.5 x the calls careful makes, paged as a model sees it (bench/bench_budgets.py
    checks the most over 200 seeds): an agent less sure than the reference solver has room to look again."""
    budget = get_task(task_id).step_budget
    for seed in PAGED_SEEDS:
        calls = len(plays(task_id, "careful", seed, (), PAGED_CHARS).steps)
        assert 1.5 * calls <= budget, (task_id, seed, calls, budget)

