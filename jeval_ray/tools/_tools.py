"""The agent's tools. Each tool owns its argument model; its JSON schema is generated from it.

A tool is a pydantic ``Args`` model plus a ``run(state, args)`` function returning a JSON-able
observation payload. Bad input raises ``ToolError``; the environment turns it into an error
observation, so nothing an agent sends can crash an episode.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from jeval_ray.builder import World
from jeval_ray.builder.spec import TaskSpec

MAX_ROWS = 500
MAX_TEXT = 4_000
SEARCH_HITS = 20
MAX_GROUPS = 60  # compute_stats lists at most this many groups per call (paged with offset)
MASTER_TABLES = ("accounts", "users", "vendors", "vendor_changes", "customers", "calendar", "related_parties", "trial_balance")
LEDGER_COLUMNS = (
    "entry_id", "line_no", "company", "account", "debit", "credit", "currency", "document_date",
    "posting_date", "entry_timestamp", "preparer", "approver", "source", "document_type", "description",
    "reference", "vendor_id",
)
#: Digit tests need enough observations (Nigrini suggests a few hundred at least).
MIN_DIGIT_POPULATION = 50
MIN_STATS_POPULATION = 5


class ToolError(Exception):
    """An agent error: reported back as an error observation, never raised out of ``step``."""


@dataclass
class Disposition:
    step_idx: int
    entry_id: str
    decision: Literal["flag", "clear"]
    evidence: tuple[str, ...]
    rationale: str
    criteria: str | None = None
    amount: float | None = None


@dataclass
class EpisodeState:
    """What the environment remembers during an episode (scorer-side bookkeeping)."""

    world: World
    criteria_codes: tuple[str, ...]
    step_idx: int = 0
    opened: dict[str, int] = field(default_factory=dict)  # evidence id -> first step it was opened
    stats_steps: list[int] = field(default_factory=list)
    dispositions: list[Disposition] = field(default_factory=list)
    submitted: bool = False
    summary: str = ""
    _entry_ids: set[str] | None = None
    _id_range: tuple[int, int] | None = None

    def open(self, evidence_id: str) -> None:
        self.opened.setdefault(evidence_id, self.step_idx)

    @property
    def entry_ids(self) -> set[str]:
        if self._entry_ids is None:
            self._entry_ids = set(self.world.ledger.column("entry_id").unique().to_pylist())
            nums = [int(x) for x in self._entry_ids | set(self.world.hidden_entries)]
            self._id_range = (min(nums), max(nums))
        return self._entry_ids

    def in_numbering(self, entry_id: str) -> bool:
        """Ids inside the journal's numbering range (the listing plus any gap in it), written as the
        journal writes them: ASCII digits, no leading zero (``01000000005`` is not ``1000000005``)."""
        self.entry_ids
        if not (entry_id.isascii() and entry_id.isdigit()) or entry_id != str(int(entry_id)):
            return False
        return self._id_range[0] <= int(entry_id) <= self._id_range[1]


# ------------------------------------------------------------------ argument models
class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_max_length=MAX_TEXT)


EvidenceList = list[str]


class ListDocumentsArgs(_Args):
    doc_type: str | None = Field(default=None, max_length=40, description="only documents of this type")
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0)


class OpenDocumentArgs(_Args):
    doc_id: str = Field(max_length=20, description="document id, e.g. DOC-0007")
    offset: int = Field(default=0, ge=0, description="character of the body to start at (a long body is paged: "
                                                      "follow next_offset)")


class SearchDocumentsArgs(_Args):
    query: str = Field(min_length=1, max_length=200, description="words to find in titles and bodies (case-insensitive)")
    limit: int = Field(default=SEARCH_HITS, ge=1, le=50)
    offset: int = Field(default=0, ge=0)


Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains", "startswith"]


class Filter(_Args):
    column: str = Field(max_length=40)
    op: Op = "eq"
    value: Any = Field(description="a string (dates as ISO text), a number, or a list for 'in' / 'not_in'")


class QueryLedgerArgs(_Args):
    filters: list[Filter] = Field(default_factory=list, max_length=10, description="all must hold (AND)")
    columns: list[str] | None = Field(default=None, max_length=len(LEDGER_COLUMNS), description="columns to return (default: all)")
    limit: int = Field(default=100, ge=1, le=MAX_ROWS)
    offset: int = Field(default=0, ge=0)


class GetEntryArgs(_Args):
    entry_id: str = Field(max_length=20)


class GetMasterDataArgs(_Args):
    table: str = Field(max_length=40, description="one of: " + ", ".join(MASTER_TABLES))
    limit: int = Field(default=200, ge=1, le=MAX_ROWS)
    offset: int = Field(default=0, ge=0)


class ComputeStatsArgs(_Args):
    measure: Literal["amount", "debit", "credit", "entry_total"] = Field(
        default="amount",
        description="per entry: 'amount' = its line 1's debit (0 if a credit), 'entry_total' = the sum of its debits; "
                    "per line: 'debit' / 'credit' = the nonzero debits / credits. An entry counts for 'amount' if "
                    "its line 1 passes the filters, for 'entry_total' if any line does",
    )
    filters: list[Filter] = Field(default_factory=list, max_length=10)
    group_by: str | None = Field(default=None, max_length=40, description="a ledger column to group by (per entry: "
                                                                          "its first line passing the filters)")
    digits: Literal["first", "last_two"] | None = Field(
        default=None, description="add a digit distribution of the values >= 10 with its mean absolute deviation (MAD)"
    )
    top_z: int = Field(default=5, ge=0, le=50, description="list this many values with the largest |z|, with their entry_id")
    robust: bool = Field(
        default=False,
        description="z-scores as (x - median) / (1.4826 x MAD), computed within each group when group_by is set",
    )
    offset: int = Field(default=0, ge=0, description="with group_by: the first group to list (groups in name order, paged)")
    limit: int = Field(default=MAX_GROUPS, ge=1, le=MAX_GROUPS, description="with group_by: how many groups to list")


class GetBalancesArgs(_Args):
    account: str | None = Field(default=None, max_length=10)
    offset: int = Field(default=0, ge=0)


class FlagEntryArgs(_Args):
    entry_id: str = Field(max_length=20)
    criteria: str = Field(max_length=40, description="a criteria code from the brief")
    evidence: EvidenceList = Field(max_length=20, description="ids you opened: DOC-…, master:<table>, or entry ids")
    rationale: str = Field(min_length=1, max_length=MAX_TEXT)
    #: accepted from every task, scored only for a misstatement whose amount the task asks for; a task's
    #: schema (``tool_schemas``) shows it, with the criteria it is for, only where the task asks for one
    amount: float | None = Field(default=None, description="misstatement amount, where the task asks for one")


class ClearEntryArgs(_Args):
    entry_id: str = Field(max_length=20)
    evidence: EvidenceList = Field(max_length=20)
    rationale: str = Field(min_length=1, max_length=MAX_TEXT)


class SubmitArgs(_Args):
    summary: str = Field(default="", max_length=MAX_TEXT)


# ------------------------------------------------------------------ helpers
def _jsonable(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else None
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _rows(table: pa.Table) -> list[dict]:
    if table.num_columns == 0:  # an empty master table (no vendor changes): pyarrow lists a slice's length of {}s
        return []
    return [{k: _jsonable(v) for k, v in r.items()} for r in table.to_pylist()]


def _mask(table: pa.Table, filters: list[Filter]) -> pa.ChunkedArray | None:
    mask = None
    for f in filters:
        if f.column not in table.column_names:
            raise ToolError(f"unknown column {f.column!r}; columns are {', '.join(table.column_names)}")
        col = table.column(f.column)
        try:
            m = _apply(col, f)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, ValueError) as exc:
            raise ToolError(f"cannot compare column {f.column!r} ({col.type}) with {f.value!r}: {str(exc)[:120]}") from None
        mask = m if mask is None else pc.and_(mask, m)
    return mask


def _scalar(col: pa.ChunkedArray, v: Any):
    t = col.type
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        if not isinstance(v, str):
            raise ValueError("dates are compared as ISO text, e.g. '2025-03-31' or '2025-03-31T18:00:00'")
        return pc.cast(pa.scalar(v), t) if pa.types.is_timestamp(t) else pa.scalar(dt.date.fromisoformat(v[:10]), t)
    if pa.types.is_floating(t) or pa.types.is_integer(t):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("numbers are compared with numbers")
        return pa.scalar(float(v) if pa.types.is_floating(t) else int(v), t)
    if isinstance(v, (dict, list)):
        raise ValueError("expected a single value")
    return pa.scalar(str(v), t)


def _apply(col: pa.ChunkedArray, f: Filter):
    op, v = f.op, f.value
    if op in ("in", "not_in"):
        if not isinstance(v, list) or len(v) > 500:
            raise ValueError(f"'{op}' needs a list of at most 500 values")
        m = pc.is_in(col, value_set=pa.array([_scalar(col, x).as_py() for x in v], col.type))
        return pc.invert(m) if op == "not_in" else m
    if op in ("contains", "startswith"):
        if not pa.types.is_string(col.type):
            raise ValueError(f"'{op}' works on text columns")
        fn = pc.match_substring if op == "contains" else pc.starts_with
        return fn(col, pattern=str(v), ignore_case=True)
    s = _scalar(col, v)
    return {"eq": pc.equal, "ne": pc.not_equal, "lt": pc.less, "le": pc.less_equal, "gt": pc.greater, "ge": pc.greater_equal}[op](col, s)


def _filtered(table: pa.Table, filters: list[Filter]) -> pa.Table:
    m = _mask(table, filters)
    return table if m is None else table.filter(m)


# ------------------------------------------------------------------ tools
def list_documents(st: EpisodeState, a: ListDocumentsArgs) -> dict:
    docs = [d for d in st.world.documents if a.doc_type is None or d.doc_type == a.doc_type]
    page = docs[a.offset : a.offset + a.limit]
    out = {"total": len(docs), "offset": a.offset, "documents": [d.listing() for d in page]}
    if a.offset + a.limit < len(docs):
        out["next_offset"] = a.offset + a.limit
    if a.doc_type is None:
        out["doc_types"] = sorted({d.doc_type for d in st.world.documents})
    return out


def open_document(st: EpisodeState, a: OpenDocumentArgs) -> dict:
    d = st.world.document(a.doc_id.strip().upper())
    if d is None:
        raise ToolError(f"no document {a.doc_id!r}; use list_documents or search_documents to find ids")
    st.open(d.doc_id)
    out = {"doc_id": d.doc_id, "doc_type": d.doc_type, "title": d.title, "date": d.date, "body": d.body[a.offset :]}
    if a.offset:
        out["offset"] = a.offset
    return out


def search_documents(st: EpisodeState, a: SearchDocumentsArgs) -> dict:
    words = [w for w in re.split(r"\s+", a.query.lower().strip()) if w]
    if not words:
        raise ToolError("the query has no words; give one or more words to find")
    hits = []
    for d in st.world.documents:
        text = f"{d.title}\n{d.body}".lower()
        if all(w in text for w in words):
            pos = text.find(words[0])
            body = f"{d.title}\n{d.body}"
            hits.append({**d.listing(), "snippet": body[max(0, pos - 60) : pos + 100].replace("\n", " ")})
    out = {"query": a.query, "total": len(hits), "documents": hits[a.offset : a.offset + a.limit]}
    if a.offset:
        out["offset"] = a.offset
    if a.offset + a.limit < len(hits):
        out["next_offset"] = a.offset + a.limit
    return out


def query_ledger(st: EpisodeState, a: QueryLedgerArgs) -> dict:
    led = st.world.ledger
    cols = list(a.columns) if a.columns else list(LEDGER_COLUMNS)
    bad = [c for c in cols if c not in led.column_names]
    if bad:
        raise ToolError(f"unknown column(s) {bad}; columns are {', '.join(led.column_names)}")
    t = _filtered(led, a.filters)
    page = t.slice(a.offset, a.limit).select(cols)
    out = {"total_rows": t.num_rows, "offset": a.offset, "rows": _rows(page)}
    if a.offset + a.limit < t.num_rows:
        out["next_offset"] = a.offset + a.limit
    return out


def get_entry(st: EpisodeState, a: GetEntryArgs) -> dict:
    eid = a.entry_id.strip()
    if eid not in st.entry_ids:
        raise ToolError(f"no entry {a.entry_id!r} in the listing")
    led = st.world.ledger
    t = led.filter(pc.equal(led.column("entry_id"), eid))
    rows = _rows(t)
    st.open(eid)
    head = {k: rows[0][k] for k in ("entry_id", "company", "currency", "document_date", "posting_date",
                                     "entry_timestamp", "preparer", "approver", "source", "document_type",
                                     "description", "reference", "vendor_id")}
    lines = [{k: r[k] for k in ("line_no", "account", "debit", "credit")} for r in rows]
    dr = round(sum(r["debit"] for r in rows), 2)
    cr = round(sum(r["credit"] for r in rows), 2)
    return {**head, "lines": lines, "total_debit": dr, "total_credit": cr}


def get_master_data(st: EpisodeState, a: GetMasterDataArgs) -> dict:
    if a.table not in MASTER_TABLES:
        raise ToolError(f"unknown table {a.table!r}; tables are {', '.join(MASTER_TABLES)}")
    t = st.world.master[a.table]
    st.open(f"master:{a.table}")
    out = {"table": a.table, "evidence_id": f"master:{a.table}", "total": t.num_rows, "rows": _rows(t.slice(a.offset, a.limit))}
    if a.offset + a.limit < t.num_rows:
        out["next_offset"] = a.offset + a.limit
    return out


def get_balances(st: EpisodeState, a: GetBalancesArgs) -> dict:
    t = st.world.master["balances"]
    if a.account is not None:
        t = t.filter(pc.equal(t.column("account"), a.account))
        if t.num_rows == 0:
            raise ToolError(f"no balance for account {a.account!r}")
    st.open("master:balances")
    out = {"evidence_id": "master:balances", "rows": _rows(t.slice(a.offset))}
    if a.offset:
        out["offset"], out["total"] = a.offset, t.num_rows
    return out


NIGRINI_FIRST = ((0.006, "close conformity"), (0.012, "acceptable conformity"), (0.015, "marginally acceptable conformity"))
NIGRINI_LAST_TWO = ((0.0015, "close conformity"), (0.002, "acceptable conformity"), (0.003, "marginally acceptable conformity"))


def digit_test(amounts: np.ndarray, kind: str) -> dict:
    """First-digit (Benford) or last-two-digit distribution with MAD and Nigrini's conformity band."""
    amounts = np.abs(np.asarray(amounts, dtype=float))
    amounts = amounts[amounts >= 10]
    n = len(amounts)
    if n < MIN_DIGIT_POPULATION:
        return {"n": int(n), "message": f"population of {n} entries is too small for a digit test (need at least {MIN_DIGIT_POPULATION})"}
    if kind == "first":
        d = (amounts / 10 ** np.floor(np.log10(amounts))).astype(int)
        d = np.clip(d, 1, 9)
        digits = np.arange(1, 10)
        expected = np.log10(1 + 1 / digits)
        bands = NIGRINI_FIRST
    else:
        cents = np.rint(amounts * 100).astype(np.int64)
        d = (cents // 100) % 100
        digits = np.arange(0, 100)
        expected = np.full(100, 0.01)
        bands = NIGRINI_LAST_TWO
    counts = np.array([(d == k).sum() for k in digits])
    observed = counts / n
    mad = float(np.mean(np.abs(observed - expected)))
    verdict = next((label for limit, label in bands if mad < limit), "nonconformity")
    dist = {str(int(k)): {"count": int(c), "observed": round(float(o), 4), "expected": round(float(e), 4)}
            for k, c, o, e in zip(digits, counts, observed, expected)}
    out = {"n": int(n), "kind": kind, "mad": round(mad, 5), "conformity": verdict, "distribution": dist}
    if kind == "last_two" and n < 300:
        out["note"] = (f"the last-two-digit bands assume several hundred entries; with {n} the MAD carries sampling "
                       "noise, so compare against other populations of similar size")
    return out


def _entry_totals(ledger: pa.Table, ids: list[str]) -> np.ndarray:
    """The sum of the debits of each entry of ``ids`` over all of its lines in ``ledger`` (cents exact)."""
    uniq, inverse = np.unique(ledger.column("entry_id").to_numpy(zero_copy_only=False), return_inverse=True)
    totals = np.round(np.bincount(inverse, weights=ledger.column("debit").to_numpy(), minlength=len(uniq)), 2)
    return totals[np.searchsorted(uniq, np.asarray(ids, dtype=object))]


def _entry_measure(ledger: pa.Table, t: pa.Table, measure: str) -> tuple[np.ndarray, list[str], pa.Table]:
    """The values of ``measure`` over the lines ``t`` of ``ledger`` that pass the filters, in ledger order: their
    entry ids and the rows they are grouped by (for a per-entry measure, one row per entry)."""
    if measure == "entry_total":
        _, first = np.unique(t.column("entry_id").to_numpy(zero_copy_only=False), return_index=True)
        lines = t.take(pa.array(np.sort(first)))  # each entry's first line that passes the filters
        ids = lines.column("entry_id").to_pylist()
        return _entry_totals(ledger, ids), ids, lines
    if measure == "amount":
        lines = t.filter(pc.equal(t.column("line_no"), 1))
        return lines.column("debit").to_numpy(), lines.column("entry_id").to_pylist(), lines
    col = t.column(measure).to_numpy()
    keep = col > 0
    return col[keep], np.asarray(t.column("entry_id").to_pylist())[keep].tolist(), t.filter(pa.array(keep))


def _describe(x: np.ndarray) -> dict:
    n = len(x)
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    q = np.percentile(x, [5, 25, 75, 95, 99])
    return {"n": n, "sum": round(float(x.sum()), 2), "mean": round(float(x.mean()), 2), "std": round(float(x.std(ddof=1)), 2),
            "median": round(med, 2), "mad": round(mad, 2), "min": round(float(x.min()), 2), "max": round(float(x.max()), 2),
            "p5": round(float(q[0]), 2), "p25": round(float(q[1]), 2), "p75": round(float(q[2]), 2),
            "p95": round(float(q[3]), 2), "p99": round(float(q[4]), 2)}


def _robust_z(x: np.ndarray, keys: np.ndarray | None) -> np.ndarray:
    """Robust z-scores; 0 where a population's MAD is 0 (no spread to measure against)."""
    z = np.zeros(len(x))
    groups = [np.arange(len(x))] if keys is None else [np.flatnonzero(keys == k) for k in np.unique(keys)]
    for g in groups:
        med = np.median(x[g])
        mad = np.median(np.abs(x[g] - med)) * 1.4826
        if mad > 0:
            z[g] = (x[g] - med) / mad
    return z


def compute_stats(st: EpisodeState, a: ComputeStatsArgs) -> dict:
    t = _filtered(st.world.ledger, a.filters)
    x, ids, rows = _entry_measure(st.world.ledger, t, a.measure)
    if len(x) < MIN_STATS_POPULATION:
        return {"n": int(len(x)), "message": f"population of {len(x)} entries is too small for statistics (need at least {MIN_STATS_POPULATION})"}
    out: dict = {"measure": a.measure, "population": _describe(x)}
    keys = None
    if a.group_by:
        if a.group_by not in rows.column_names:
            raise ToolError(f"unknown group_by column {a.group_by!r}")
        keys = np.asarray([str(k) for k in rows.column(a.group_by).to_pylist()])
    if a.top_z:
        z = _robust_z(x, keys) if a.robust else ((x - x.mean()) / x.std(ddof=1) if x.std(ddof=1) > 0 else None)
        if z is not None:
            top = np.argsort(-np.abs(z), kind="stable")[: a.top_z]
            out["top_z_scores"] = [{"entry_id": ids[i], "value": round(float(x[i]), 2), "z": round(float(z[i]), 2),
                                    **({a.group_by: str(keys[i])} if keys is not None else {})} for i in top]
            out["z_method"] = ("robust: (x - median) / (1.4826 x MAD)" + (f" within each {a.group_by}" if keys is not None else "")
                               if a.robust else "(x - mean) / std over the filtered population")
    if keys is not None:
        groups = {}
        names = sorted(set(keys.tolist()))
        for k in names[a.offset : a.offset + a.limit]:
            gx = x[keys == k]
            groups[k] = _describe(gx) if len(gx) >= 2 else {"n": int(len(gx)), "sum": round(float(gx.sum()), 2)}
        out["groups"] = groups
        if a.offset or len(names) > a.limit:
            out["groups_total"], out["offset"] = len(names), a.offset
        if a.offset + a.limit < len(names):
            out["next_offset"] = a.offset + a.limit
    if a.digits:
        out["digit_test"] = digit_test(x, "first" if a.digits == "first" else "last_two")
    # only statistics that answered are a population baseline (baseline_before_claim)
    st.stats_steps.append(st.step_idx)
    return out


def _check_evidence(evidence: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.strip() for e in evidence if e.strip()))


def flag_entry(st: EpisodeState, a: FlagEntryArgs) -> dict:
    eid = a.entry_id.strip()
    if not st.in_numbering(eid):
        raise ToolError(f"no entry {a.entry_id!r} in this journal's numbering")
    crit = a.criteria.strip().upper()
    if crit not in st.criteria_codes:
        raise ToolError(f"unknown criteria {a.criteria!r}; use one of {', '.join(st.criteria_codes)}")
    if a.amount is not None and not math.isfinite(a.amount):
        raise ToolError("amount must be a finite number")
    st.dispositions.append(Disposition(st.step_idx, eid, "flag", _check_evidence(a.evidence), a.rationale, crit, a.amount))
    return {"ok": True, "entry_id": eid, "decision": "flag", "criteria": crit, "dispositions_so_far": len({d.entry_id for d in st.dispositions})}


def clear_entry(st: EpisodeState, a: ClearEntryArgs) -> dict:
    eid = a.entry_id.strip()
    if not st.in_numbering(eid):
        raise ToolError(f"no entry {a.entry_id!r} in this journal's numbering")
    st.dispositions.append(Disposition(st.step_idx, eid, "clear", _check_evidence(a.evidence), a.rationale))
    return {"ok": True, "entry_id": eid, "decision": "clear", "dispositions_so_far": len({d.entry_id for d in st.dispositions})}


def submit(st: EpisodeState, a: SubmitArgs) -> dict:
    st.submitted = True
    st.summary = a.summary
    flagged = {d.entry_id for d in st.dispositions if d.decision == "flag"}
    return {"ok": True, "submitted": True, "flagged": len(flagged), "note": "undispositioned entries count as approved"}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[_Args]
    run: Callable[[EpisodeState, Any], dict]

    def schema(self) -> dict:
        """OpenAI function-calling schema, generated from the argument model (a fresh copy)."""
        return json.loads(_schema_json(self.name, self.description, self.args))


@functools.cache
def _schema_json(name: str, description: str, args: type[_Args]) -> str:
    # pydantic rebuilds the JSON schema on every call, and a deep copy of the dict costs more than
    # parsing it again: episodes reset thousands of times per sweep, each wanting its own copy
    params = args.model_json_schema()
    params.pop("title", None)
    return json.dumps({"type": "function", "function": {"name": name, "description": description, "parameters": params}})


def tool_schemas(spec: TaskSpec, names) -> list[dict]:
    """The schemas of a task's tools ``names``, as its agent is given them. ``flag_entry`` is the task's
    own: its ``amount`` says for which criteria an amount is asked and what it is, and is left out where
    the task asks for none (an amount sent anyway is accepted and ignored)."""
    return [_flag_schema(spec) if n == "flag_entry" else TOOLS[n].schema() for n in names]


def _flag_schema(spec: TaskSpec) -> dict:
    schema = TOOLS["flag_entry"].schema()
    fn = schema["function"]
    asked = spec.amount_criteria
    if not asked:
        fn["description"] = "Record an exception on an entry: criteria code, evidence ids you opened, and rationale."
        del fn["parameters"]["properties"]["amount"]
        return schema
    deviations = [c.code for c in spec.criteria if not c.is_misstatement]
    fn["description"] = ("Record an exception on an entry: criteria code, evidence ids you opened, rationale, and for "
                         "a misstatement its amount.")
    fn["parameters"]["properties"]["amount"]["description"] = (
        "the misstatement amount, asked for " + "; ".join(f"{c.code}: {c.amount}" for c in asked) + "."
        + (f" Leave it out for a control deviation ({', '.join(deviations)}): no amount is asked or scored."
           if deviations else ""))
    return schema


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("list_documents", "List support-pack documents (id, type, title, date), optionally of one type; paged.", ListDocumentsArgs, list_documents),
        Tool("open_document", "Open a document and read its text (a long body comes in pages: call again with offset=next_offset). Opening is what makes a document citable as evidence.", OpenDocumentArgs, open_document),
        Tool("search_documents", "Find documents whose title or text contains all the given words; returns snippets (does not open them); paged.", SearchDocumentsArgs, search_documents),
        Tool("query_ledger", "Query journal-entry lines (one row per line, in posting-date order) with filters (AND), chosen columns, limit and offset. An entry has 2 or more lines (line_no 1, 2, ...), each a debit or a credit.", QueryLedgerArgs, query_ledger),
        Tool("get_entry", "Get one entry's header and all its lines with debit and credit totals; opening an entry makes it citable.", GetEntryArgs, get_entry),
        Tool("get_master_data", "Read a master-data table: " + ", ".join(MASTER_TABLES) + ". Cite it as master:<table>.", GetMasterDataArgs, get_master_data),
        Tool("compute_stats", "Population statistics of a measure of the ledger lines passing the filters (n, mean, median, MAD, percentiles, z-scores), optionally grouped (groups paged with offset), or with first/last-two digit tests (MAD with Nigrini's conformity bands).", ComputeStatsArgs, compute_stats),
        Tool("get_balances", "Opening and closing balances per account (trial balance) for a roll-forward; cite it as master:balances; paged.", GetBalancesArgs, get_balances),
        Tool("flag_entry", "Record an exception on an entry: criteria code, evidence ids you opened, rationale, and amount where asked.", FlagEntryArgs, flag_entry),
        Tool("clear_entry", "Record that an entry you examined is not an exception, with the evidence that clears it.", ClearEntryArgs, clear_entry),
        Tool("submit", "Finish the engagement with a summary. Entries you did not dispose of count as approved.", SubmitArgs, submit),
    )
}
