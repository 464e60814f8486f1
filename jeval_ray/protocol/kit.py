"""The scripted strategies' view of the protocol: ``Kit``, the tool-call helpers a strategy holds.

A strategy is ``def strategy(kit) -> Generator[Action, str, None]``. It calls tools with
``obs = yield from kit.call("get_entry", entry_id=...)`` and receives exactly the observation
text an LLM would receive (parsed from JSON). It never sees the world object. The built-in agents
(``jeval_ray.agents``) run strategies; the tasks define theirs on this kit, so it sits below them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from jeval_ray.protocol import Action

Strategy = Callable[["Kit"], Generator[Action, str, None]]


class Kit:
    """What a scripted strategy holds: the brief, the tool names, the task id and step budget, a seeded RNG
    and tool-call helpers."""

    def __init__(self, brief: str, tools: list[dict], seed: int, rng: np.random.Generator, *, task_id: str,
                 step_budget: int):
        self.brief = brief
        self.tools = [t["function"]["name"] for t in tools]
        self._params = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
        self.seed = seed
        self.rng = rng
        #: the episode's task and step budget, from the reset's info (never read off the brief or the knobs)
        self.task_id = task_id
        self.calls_left = int(step_budget)
        self.errors = 0

    def has(self, tool: str) -> bool:
        return tool in self.tools

    def call(self, tool: str, **args: Any) -> Generator[Action, str, dict]:
        """Call a tool; returns the parsed observation (``{"error": ...}`` on an error).

        A result the environment paged to the agent's character budget (``truncated`` with
        ``next_offset``) is followed transparently: the kit calls again from ``next_offset`` (for the
        rest of the requested ``limit``) until the page is whole, and returns the pages joined, as the
        unpaged result would read. Every page is a call (``calls_left``)."""
        obs = yield from self._call_once(tool, args)
        if isinstance(obs, dict) and obs.get("truncated") and "next_offset" in obs and obs.get("page_field") in obs:
            obs = yield from self._follow(tool, args, obs)
        return obs

    def _follow(self, tool: str, args: dict, first: dict) -> Generator[Action, str, dict]:
        field = first["page_field"]
        limit = args.get("limit", self._params.get(tool, {}).get("properties", {}).get("limit", {}).get("default"))
        parts, got, obs = [first[field]], first.get("returned", len(first[field])), first
        while obs.get("truncated") and "next_offset" in obs:
            more = {**args, "offset": obs["next_offset"]}
            if isinstance(limit, int):
                if got >= limit:
                    break
                more["limit"] = limit - got
            nxt = yield from self._call_once(tool, more)
            if not isinstance(nxt, dict) or field not in nxt or not len(nxt[field]):
                break
            obs = nxt
            parts.append(obs[field])
            got += obs.get("returned", len(obs[field]))
        merged = {k: v for k, v in {**first, **obs}.items() if k not in _PAGING_KEYS}
        if isinstance(parts[0], str):
            merged[field] = "".join(parts)
        elif isinstance(parts[0], dict):
            merged[field] = {k: v for part in parts for k, v in part.items()}
        else:
            merged[field] = [x for part in parts for x in part]
        if "offset" in first:
            merged["offset"] = first["offset"]
        if "next_offset" in obs:  # the unpaged result's own (more beyond the limit), or where to go on when stopped
            merged["next_offset"] = obs["next_offset"]
        return merged

    def _call_once(self, tool: str, args: dict) -> Generator[Action, str, dict]:
        text = yield Action(tool=tool, args=args)
        self.calls_left -= 1
        try:
            obs = json.loads(text)
        except (TypeError, json.JSONDecodeError):
            obs = {"error": "unparseable observation"}
        if isinstance(obs, dict) and "error" in obs:
            self.errors += 1
        return obs

    def ledger(self, filters: list[dict] | None = None, columns: list[str] | None = None,
               max_pages: int = 20) -> Generator[Action, str, list[dict]]:
        """All ledger lines matching ``filters`` (paging through ``query_ledger``)."""
        rows: list[dict] = []
        offset = 0
        for _ in range(max_pages):
            obs = yield from self.call("query_ledger", filters=filters or [], columns=columns, limit=500, offset=offset)
            rows += obs.get("rows", [])
            if "next_offset" not in obs:
                break
            offset = obs["next_offset"]
        return rows

    def master(self, table: str) -> Generator[Action, str, list[dict]]:
        rows: list[dict] = []
        offset = 0
        while True:
            obs = yield from self.call("get_master_data", table=table, limit=500, offset=offset)
            rows += obs.get("rows", [])
            if "next_offset" not in obs:
                return rows
            offset = obs["next_offset"]

    def documents(self, doc_type: str | None = None) -> Generator[Action, str, list[dict]]:
        docs: list[dict] = []
        offset = 0
        while True:
            args = {"limit": 200, "offset": offset}
            if doc_type:
                args["doc_type"] = doc_type
            obs = yield from self.call("list_documents", **args)
            docs += obs.get("documents", [])
            if "next_offset" not in obs:
                return docs
            offset = obs["next_offset"]

    def find_document(self, query: str, *title_words: str, require_title: bool = False) -> Generator[Action, str, str | None]:
        """The id of the document whose title holds most of ``title_words`` among those matching
        ``query`` (``search_documents`` when the task has it, else the whole listing); ties go to
        the lowest id. With ``require_title``, None unless some title word matches."""
        if self.has("search_documents"):
            hits = (yield from self.call("search_documents", query=query)).get("documents", [])
        else:
            hits = yield from self.documents()
        words = [w.lower() for w in title_words]

        def score(d: dict) -> int:
            return sum(w in d["title"].lower() for w in words)

        ranked = sorted(hits, key=lambda d: (-score(d), d["doc_id"]))
        if not ranked or (require_title and score(ranked[0]) == 0):
            return None
        return ranked[0]["doc_id"]

    def open(self, doc_id: str) -> Generator[Action, str, dict]:
        return (yield from self.call("open_document", doc_id=doc_id))

    def flag(self, entry_id: str, criteria: str, evidence: list[str], rationale: str, amount: float | None = None):
        args = {"entry_id": entry_id, "criteria": criteria, "evidence": evidence, "rationale": rationale}
        if amount is not None:
            args["amount"] = round(float(amount), 2)
        return (yield from self.call("flag_entry", **args))

    def clear(self, entry_id: str, evidence: list[str], rationale: str):
        return (yield from self.call("clear_entry", entry_id=entry_id, evidence=evidence, rationale=rationale))

    def submit(self, summary: str):
        return (yield from self.call("submit", summary=summary))

    def criteria(self) -> list[str]:
        return re.findall(r"^\s+- ([A-Z_]+):", self.brief, flags=re.M)


#: fields the environment adds to a paged result (``jeval_ray.tools.fit_result``)
_PAGING_KEYS = ("truncated", "page_field", "returned", "note", "next_offset")




def entries_of(rows: list[dict]) -> dict[str, dict]:
    """Group ledger lines by entry: header fields from line 1, plus debit/credit totals."""
    out: dict[str, dict] = {}
    for r in rows:
        e = out.get(r["entry_id"])
        if e is None:
            e = out[r["entry_id"]] = {**r, "total_debit": 0.0, "total_credit": 0.0, "accounts": []}
        e["total_debit"] = round(e["total_debit"] + (r.get("debit") or 0.0), 2)
        e["total_credit"] = round(e["total_credit"] + (r.get("credit") or 0.0), 2)
        if "account" in r:
            e["accounts"].append(r["account"])
    return out


__all__ = ["Kit", "Strategy", "entries_of"]
