"""The tools' descriptions say what the tools do (issue 29, point 8): each factual claim of a tool's
description or parameter descriptions (what a row is, what a measure means, defaults, limits, paging
fields, order, what filters accept, what an entry has) is checked against the tool on generated
worlds, with the claim parsed from the schema the agent sees where practical, and the expected values
computed from the world's ledger directly."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest
from support.worlds import world

from jeval_ray.env import JEEnv
from jeval_ray.tools import MIN_BUDGET, PAGE_FIELDS, TOOLS
from jeval_ray.tools._tools import MASTER_TABLES

TASKS = ("JE-1", "JE-12", "JE-16")  # JE-16 offers every tool; JE-12's plan reads compute_stats' 'amount'
STATS_TASKS = ("JE-12", "JE-16")
SEED = 0


def schema(tool: str) -> dict:
    return TOOLS[tool].schema()["function"]


def desc(tool: str) -> str:
    return schema(tool)["description"]


def prop(tool: str, name: str) -> dict:
    return schema(tool)["parameters"]["properties"][name]


def claim(pattern: str, text: str) -> re.Match:
    m = re.search(pattern, text)
    assert m, f"the description no longer says {pattern!r}: {text!r}"
    return m


def env_on(w, budget: int | None = None) -> JEEnv:
    env = JEEnv(w.task_id, step_budget=100_000)
    env.reset(w.seed, world=w, max_observation_chars=budget)
    return env


def call(env: JEEnv, tool: str, **args) -> dict:
    text, *_ = env.step({"tool": tool, "args": args})
    return json.loads(text)


def ledger_rows(w) -> list[dict]:
    return w.ledger.to_pylist()


def tool_rows(env: JEEnv, **args) -> tuple[int, list[dict]]:
    """Every row query_ledger returns for ``args``, following next_offset."""
    rows, offset = [], 0
    while True:
        r = call(env, "query_ledger", limit=500, offset=offset, **args)
        rows += r["rows"]
        if "next_offset" not in r:
            return r["total_rows"], rows
        offset = r["next_offset"]


# ------------------------------------------------------------------------------------ query_ledger
@pytest.mark.parametrize("task", TASKS)
def test_query_ledger_rows_are_lines_and_entries_have_the_stated_lines(task):
    w = world(task, SEED)
    env = env_on(w)
    text = desc("query_ledger")
    claim(r"one row per line", text)
    least = int(claim(r"An entry has (\d+) or more lines \(line_no 1, 2, \.\.\.\), each a debit or a credit", text)[1])
    total, rows = tool_rows(env)
    assert total == len(rows) == w.ledger.num_rows  # one row per line of the ledger
    assert [(r["entry_id"], r["line_no"]) for r in rows] == [(r["entry_id"], r["line_no"]) for r in ledger_rows(w)]
    lines = defaultdict(list)
    for r in rows:
        lines[r["entry_id"]].append(r["line_no"])
    counts = Counter(len(v) for v in lines.values())
    assert min(counts) == least and len(counts) > 1, counts  # 2 or more, and not always 2
    assert all(v == list(range(1, len(v) + 1)) for v in lines.values())  # line_no 1, 2, ... in order
    assert all((r["debit"] > 0) != (r["credit"] > 0) and min(r["debit"], r["credit"]) == 0 for r in rows)
    # line 1 is not always the debit line (what the description said before issue 29)
    assert any(r["line_no"] == 1 and r["credit"] > 0 for r in rows)


@pytest.mark.parametrize("task", TASKS)
def test_query_ledger_rows_come_in_posting_date_order(task):
    claim(r"in posting-date order", desc("query_ledger"))
    _, rows = tool_rows(env_on(world(task, SEED)), columns=["entry_id", "posting_date"])
    dates = [r["posting_date"] for r in rows]
    assert dates == sorted(dates)
    seen, prev = set(), None  # an entry's lines come together
    for r in rows:
        if r["entry_id"] != prev:
            assert r["entry_id"] not in seen
            seen.add(r["entry_id"])
            prev = r["entry_id"]


def test_query_ledger_columns_default_to_all_and_filters_accept_what_they_say():
    w = world("JE-16", SEED)
    env = env_on(w)
    led = ledger_rows(w)
    claim(r"\(default: all\)", prop("query_ledger", "columns")["description"])
    assert list(call(env, "query_ledger", limit=1)["rows"][0]) == w.ledger.column_names
    claim(r"all must hold \(AND\)", prop("query_ledger", "filters")["description"])
    filt = schema("query_ledger")["parameters"]["$defs"]["Filter"]["properties"]
    claim(r"a string \(dates as ISO text\), a number, or a list for 'in' / 'not_in'", filt["value"]["description"])
    assert filt["op"]["default"] == "eq"
    acct = Counter(r["account"] for r in led).most_common(2)
    accts = [a for a, _ in acct]
    cases = [
        ([{"column": "source", "value": "manual"}], lambda r: r["source"] == "manual"),  # a string, op by default
        ([{"column": "posting_date", "op": "ge", "value": "2025-07-01"}], lambda r: str(r["posting_date"]) >= "2025-07-01"),
        ([{"column": "entry_timestamp", "op": "lt", "value": "2025-03-31T12:00:00"}],
         lambda r: r["entry_timestamp"].isoformat() < "2025-03-31T12:00:00"),
        ([{"column": "debit", "op": "gt", "value": 10000}], lambda r: r["debit"] > 10000),  # a number
        ([{"column": "account", "op": "in", "value": accts}], lambda r: r["account"] in accts),  # a list
        ([{"column": "account", "op": "not_in", "value": accts}], lambda r: r["account"] not in accts),
        ([{"column": "source", "value": "manual"}, {"column": "debit", "op": "gt", "value": 0}],  # AND
         lambda r: r["source"] == "manual" and r["debit"] > 0),
    ]
    for filters, keep in cases:
        want = sum(map(keep, led))
        assert 0 < want < len(led), filters
        assert call(env, "query_ledger", filters=filters, limit=1)["total_rows"] == want, filters
    err = call(env, "query_ledger", filters=[{"column": "account", "value": accts}])  # a list is for 'in' / 'not_in'
    assert "error" in err and "account" in err["error"]


# ------------------------------------------------------------------------------------ defaults, limits, paging
def big_world(w):
    """``w`` with more documents and master rows than any limit, so every stated limit binds."""
    docs = tuple(dataclasses.replace(d, doc_id=f"DOC-{i + 1:04d}")
                 for i, d in enumerate(d for _ in range(15) for d in w.documents))
    master = {**w.master, "trial_balance": pa.concat_tables([w.master["trial_balance"]] * 2)}
    return dataclasses.replace(w, documents=docs, master=master, _doc_index={}, _memo={})


LIMITED = {  # tool -> the arguments of a call whose result has more items than the tool's maximum limit
    "list_documents": {},
    "search_documents": {"query": "e"},
    "query_ledger": {},
    "get_master_data": {"table": "trial_balance"},
    "compute_stats": {"group_by": "entry_id", "top_z": 0},
}


def items(tool: str, result: dict) -> list:
    return list(result[PAGE_FIELDS[tool]])


def test_every_limit_parameter_is_listed():
    limited = {name for name in TOOLS if "limit" in schema(name)["parameters"]["properties"]}
    assert limited == set(LIMITED)


@pytest.mark.parametrize("tool", sorted(LIMITED))
def test_stated_default_and_maximum_limits_are_the_ones_applied(tool):
    env = env_on(big_world(world("JE-16", SEED)))
    limit = prop(tool, "limit")
    default, most = limit["default"], limit["maximum"]
    assert limit["minimum"] == 1 and prop(tool, "offset")["default"] == 0
    args = LIMITED[tool]
    whole = []  # every item, following next_offset at the maximum limit
    offset = 0
    while True:
        r = call(env, tool, **args, limit=most, offset=offset)
        assert len(items(tool, r)) <= most
        whole += items(tool, r)
        if "next_offset" not in r:
            break
        assert r["next_offset"] == offset + most  # the paging field the descriptions name
        offset = r["next_offset"]
    assert len(whole) > most >= default
    first = call(env, tool, **args)
    assert items(tool, first) == whole[:default]  # the stated default, from the stated default offset
    assert first["next_offset"] == default
    assert items(tool, call(env, tool, **args, offset=first["next_offset"])) == whole[default:2 * default]
    err = call(env, tool, **args, limit=most + 1)
    assert "error" in err and "limit" in err["error"] and str(most) in err["error"]


def test_compute_stats_groups_are_paged_in_name_order():
    claim(r"groups paged with offset", desc("compute_stats"))
    claim(r"groups in name order, paged", prop("compute_stats", "offset")["description"])
    env = env_on(world("JE-16", SEED))
    r = call(env, "compute_stats", group_by="account", top_z=0, limit=7)
    names = list(r["groups"])
    assert r["groups_total"] > 7 and r["next_offset"] == 7 and names == sorted(names)
    rest = call(env, "compute_stats", group_by="account", top_z=0, offset=7, limit=60)
    both = names + list(rest["groups"])
    assert both == sorted(both) and len(both) == r["groups_total"]


def test_a_long_document_comes_in_pages_from_next_offset():
    text = desc("open_document")
    claim(r"call again with offset=next_offset", text)
    claim(r"Opening is what makes a document citable", text)
    w = world("JE-16", SEED)
    doc = max(w.documents, key=lambda d: len(d.body))
    env = env_on(w, budget=MIN_BUDGET)
    body, offset = "", 0
    while True:
        r = call(env, "open_document", doc_id=doc.doc_id, offset=offset)
        body += r["body"]
        if "next_offset" not in r:
            break
        offset = r["next_offset"]
    assert offset > 0 and body == doc.body
    assert doc.doc_id in env.state.opened


# ------------------------------------------------------------------------------------ compute_stats
def hand_values(w, measure: str, keep) -> list[tuple[str, float, dict]]:
    """(entry id, value, the line its groups read) of ``measure`` over the lines passing ``keep``, in ledger order,
    as the measure's description defines it, computed from the ledger's rows."""
    led = ledger_rows(w)
    if measure == "amount":  # per entry: its line 1's debit (0 if a credit), when line 1 passes
        return [(r["entry_id"], r["debit"], r) for r in led if r["line_no"] == 1 and keep(r)]
    if measure == "entry_total":  # per entry with a passing line: the sum of all its debits
        total: dict[str, float] = defaultdict(float)
        for r in led:
            total[r["entry_id"]] += r["debit"]
        first: dict[str, dict] = {}
        for r in led:
            if keep(r):
                first.setdefault(r["entry_id"], r)
        return [(e, round(total[e], 2), r) for e, r in first.items()]
    return [(r["entry_id"], r[measure], r) for r in led if keep(r) and r[measure] > 0]  # per line: nonzero ones


FILTERS = {  # name -> (filters, the same by hand); the account is the ledger's most common one
    "all lines": (lambda a: [], lambda a: lambda r: True),
    "manual entries": (lambda a: [{"column": "source", "value": "manual"}], lambda a: lambda r: r["source"] == "manual"),
    "one account": (lambda a: [{"column": "account", "value": a}], lambda a: lambda r: r["account"] == a),
}


def test_every_measure_is_described_and_computed_here():
    m = prop("compute_stats", "measure")
    assert set(m["enum"]) == {"amount", "entry_total", "debit", "credit"}  # a new measure needs hand_values
    assert m["default"] == "amount"
    text = m["description"]
    claim(r"per entry: 'amount' = its line 1's debit \(0 if a credit\), 'entry_total' = the sum of its debits", text)
    claim(r"per line: 'debit' / 'credit' = the nonzero debits / credits", text)
    claim(r"An entry counts for 'amount' if its line 1 passes the filters, for 'entry_total' if any line does", text)
    claim(r"of a measure of the ledger lines passing the filters", desc("compute_stats"))
    env = env_on(world("JE-16", SEED))
    err = call(env, "compute_stats", measure="total")
    assert "error" in err and "measure" in err["error"] and "entry_total" in err["error"]


@pytest.mark.parametrize("task", STATS_TASKS)
@pytest.mark.parametrize("measure", ["amount", "entry_total", "debit", "credit"])
@pytest.mark.parametrize("filt", sorted(FILTERS))
def test_each_measure_measures_what_it_says(task, measure, filt):
    w = world(task, SEED)
    env = env_on(w)
    acct = Counter(w.ledger.column("account").to_pylist()).most_common(1)[0][0]
    filters, keep = FILTERS[filt][0](acct), FILTERS[filt][1](acct)
    want = hand_values(w, measure, keep)
    x = np.array([v for _, v, _ in want])
    top = prop("compute_stats", "top_z")["maximum"]
    r = call(env, "compute_stats", measure=measure, filters=filters, top_z=top)
    pop = r["population"]
    for name in re.findall(r"\b(n|mean|median|MAD)\b", claim(r"\(n, mean, median, MAD, percentiles, z-scores\)",
                                                              desc("compute_stats"))[0]):
        assert name.lower() in pop
    assert any(k.startswith("p") and k[1:].isdigit() for k in pop)  # percentiles
    assert pop["n"] == len(want)
    assert pop["sum"] == round(float(x.sum()), 2) and pop["median"] == round(float(np.median(x)), 2)
    assert pop["min"] == round(float(x.min()), 2) and pop["max"] == round(float(x.max()), 2)
    # the top z-scores: the values with the largest |z|, with their entry ids
    z = (x - x.mean()) / x.std(ddof=1)
    order = np.argsort(-np.abs(z), kind="stable")[:top]
    assert [(t["entry_id"], t["value"]) for t in r["top_z_scores"]] == [(want[i][0], round(float(x[i]), 2)) for i in order]
    if measure in ("amount", "entry_total"):  # one value per entry
        assert len({e for e, _, _ in want}) == len(want)
    if measure == "amount" and filt == "all lines":  # 0 for an entry whose line 1 is a credit
        assert any(v == 0 for v in x)


@pytest.mark.parametrize("task", STATS_TASKS)
def test_entry_total_is_the_entry_total_get_entry_shows(task):
    w = world(task, SEED)
    env = env_on(w)
    r = call(env, "compute_stats", measure="entry_total", top_z=prop("compute_stats", "top_z")["maximum"])
    by_hand: dict[str, float] = defaultdict(float)
    for row in ledger_rows(w):
        by_hand[row["entry_id"]] += row["debit"]
    assert r["population"]["n"] == len(by_hand) == w.n_entries
    assert r["population"]["sum"] == round(sum(by_hand.values()), 2)
    for t in r["top_z_scores"]:
        entry = call(env, "get_entry", entry_id=t["entry_id"])
        assert t["value"] == entry["total_debit"] == round(by_hand[t["entry_id"]], 2)
    # the entries whose total differs from their line 1's debit: the measure is not 'amount' under another name
    amount = dict((e, v) for e, v, _ in hand_values(w, "amount", lambda row: True))
    assert sum(abs(amount[e] - v) > 0.005 for e, v in by_hand.items()) > 10


@pytest.mark.parametrize("measure", ["amount", "entry_total", "debit", "credit"])
def test_groups_read_the_stated_line(measure):
    claim(r"a ledger column to group by \(per entry: its first line passing the filters\)",
          prop("compute_stats", "group_by")["description"])
    w = world("JE-16", SEED)
    env = env_on(w)
    keep = FILTERS["manual entries"][1](None)
    want: dict[str, list[float]] = defaultdict(list)
    for _, v, line in hand_values(w, measure, keep):
        want[line["account"]].append(v)
    r = call(env, "compute_stats", measure=measure, filters=FILTERS["manual entries"][0](None), group_by="account", top_z=0)
    assert "groups_total" not in r and list(r["groups"]) == sorted(want)
    for k, g in r["groups"].items():
        assert (g["n"], g["sum"]) == (len(want[k]), round(float(np.sum(want[k])), 2)), k


def test_robust_z_is_computed_within_each_group():
    text = prop("compute_stats", "robust")["description"]
    claim(r"\(x - median\) / \(1\.4826 x MAD\), computed within each group when group_by is set", text)
    claim(r"list this many values with the largest \|z\|, with their entry_id", prop("compute_stats", "top_z")["description"])
    w = world("JE-12", SEED)
    env = env_on(w)
    want = hand_values(w, "amount", lambda r: r["source"] == "manual")
    x = np.array([v for _, v, _ in want])
    keys = np.array([line["account"] for _, _, line in want])
    z = np.zeros(len(x))
    for k in set(keys.tolist()):
        g = keys == k
        mad = 1.4826 * np.median(np.abs(x[g] - np.median(x[g])))
        if mad > 0:
            z[g] = (x[g] - np.median(x[g])) / mad
    r = call(env, "compute_stats", filters=FILTERS["manual entries"][0](None), group_by="account", robust=True)
    top = r["top_z_scores"]
    assert len(top) == prop("compute_stats", "top_z")["default"]
    order = np.argsort(-np.abs(z), kind="stable")[: len(top)]
    assert [(t["entry_id"], t["z"], t["account"]) for t in top] == [(want[i][0], round(float(z[i]), 2), keys[i]) for i in order]


@pytest.mark.parametrize("kind", ["first", "last_two"])
def test_digit_tests_count_the_stated_values(kind):
    least = float(claim(r"a digit distribution of the values >= (\d+)", prop("compute_stats", "digits")["description"])[1])
    assert kind in prop("compute_stats", "digits")["anyOf"][0]["enum"]
    w = world("JE-16", SEED)
    # the amount measure reads line 1's debit, 0 where line 1 is a credit: values below the floor exist to leave out
    x = np.array([v for _, v, _ in hand_values(w, "amount", lambda r: True)])
    d = call(env_on(w), "compute_stats", measure="amount", digits=kind, top_z=0)["digit_test"]
    assert d["n"] == int((x >= least).sum()) < len(x)
    assert d["kind"] == kind and "mad" in d


# ------------------------------------------------------------------------------------ entries, documents, master data
def test_get_entry_shows_all_lines_and_their_totals():
    claim(r"all its lines with debit and credit totals; opening an entry makes it citable", desc("get_entry"))
    w = world("JE-16", SEED)
    env = env_on(w)
    lines = defaultdict(list)
    for r in ledger_rows(w):
        lines[r["entry_id"]].append(r)
    eid = max(lines, key=lambda e: len(lines[e]))
    r = call(env, "get_entry", entry_id=eid)
    assert [(x["line_no"], x["account"], x["debit"], x["credit"]) for x in r["lines"]] == \
        [(x["line_no"], x["account"], x["debit"], x["credit"]) for x in lines[eid]]
    assert r["total_debit"] == round(sum(x["debit"] for x in lines[eid]), 2)
    assert r["total_credit"] == round(sum(x["credit"] for x in lines[eid]), 2)
    assert eid in env.state.opened


def test_document_listing_and_search_say_what_they_return():
    claim(r"List support-pack documents \(id, type, title, date\), optionally of one type", desc("list_documents"))
    claim(r"contains all the given words; returns snippets \(does not open them\)", desc("search_documents"))
    claim(r"\(case-insensitive\)", prop("search_documents", "query")["description"])
    w = world("JE-16", SEED)
    env = env_on(w)
    r = call(env, "list_documents")
    assert all(list(d) == ["doc_id", "doc_type", "title", "date"] for d in r["documents"])
    kind = w.documents[0].doc_type
    assert [d["doc_id"] for d in call(env, "list_documents", doc_type=kind)["documents"]] == \
        [d.doc_id for d in w.documents if d.doc_type == kind]
    words = w.documents[0].title.split()[:2]
    hits = call(env, "search_documents", query=" ".join(words).upper())
    want = [d.doc_id for d in w.documents if all(x.lower() in f"{d.title}\n{d.body}".lower() for x in words)]
    assert [d["doc_id"] for d in hits["documents"]] == want and want
    assert all("snippet" in d for d in hits["documents"])
    assert not env.state.opened


def test_master_data_tables_are_the_ones_named():
    text = desc("get_master_data")
    named = [t.strip() for t in claim(r"Read a master-data table: ([a-z_, ]+)\.", text)[1].split(",")]
    assert named == list(MASTER_TABLES) and named == [t.strip() for t in prop("get_master_data", "table")["description"]
                                                      .removeprefix("one of: ").split(",")]
    claim(r"Cite it as master:<table>", text)
    w = world("JE-16", SEED)
    env = env_on(w)
    for t in named:
        r = call(env, "get_master_data", table=t)
        assert r["evidence_id"] == f"master:{t}" and r["total"] == w.master[t].num_rows
        assert f"master:{t}" in env.state.opened
    assert "balances" in call(env, "get_master_data", table="balances")["error"]  # read with get_balances


def test_balances_are_opening_and_closing_per_account():
    claim(r"Opening and closing balances per account .*cite it as master:balances", desc("get_balances"))
    w = world("JE-16", SEED)
    r = call(env_on(w), "get_balances")
    assert r["evidence_id"] == "master:balances"
    assert all({"account", "opening_balance", "closing_balance"} <= set(x) for x in r["rows"])
    accounts = [x["account"] for x in r["rows"]]
    assert len(set(accounts)) == len(accounts) == w.master["balances"].num_rows
