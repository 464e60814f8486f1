"""The scripted strategies' view of the protocol: ``Kit``, the tool-call helpers a strategy holds.

A strategy is ``def strategy(kit) -> Generator[Step, Any, None]``. It calls tools with
``obs = yield from kit.call("get_entry", entry_id=...)`` and receives exactly the observation
text an LLM would receive (parsed from JSON). It never sees the world object. The built-in agents
(``jeval_ray.agents``) run strategies; the tasks define theirs on this kit, so it sits below them.

Replies with several tool calls, as models make them (parallel tool calls): a step is one ``Action``
(the agent sends back its observation text) or a ``Batch`` of them (the agent sends back the list of
their texts, in order). The kit makes batches two ways, neither changing which calls are made or their
order of the dispositions: a disposition (``flag``/``clear``) needs no answer to go on, so it waits and
goes out with the next call (``MAX_CALLS_PER_REPLY`` at most in one reply); and ``gather`` makes
independent reads in one reply (their pages are followed after it, so reads may go out in another order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.protocol import Action

#: tool calls one reply makes at most (dispositions waiting for the next call, a ``gather``)
MAX_CALLS_PER_REPLY = 8
#: what a strategy receives for a call of a batch the episode did not run (its budget ran out mid-reply)
NOT_RUN = '{"error": "not run: the episode ended before this call"}'


@dataclass(frozen=True)
class Batch:
    """Tool calls made in one reply; the agent answers with the list of their observation texts."""

    actions: tuple[Action, ...]


#: what a strategy yields: one call, or several in one reply
Step = Action | Batch
Strategy = Callable[["Kit"], Generator[Step, Any, None]]


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
        #: make several calls in one reply where the strategy allows (False: one call per reply)
        self.parallel = True
        self._waiting: list[Action] = []  # dispositions made, not yet sent: they go out with the next call
        self._prefetched: dict[str, list[dict]] = {}  # results asked for ahead (prefetch), by call, until used

    @property
    def waiting(self) -> int:
        """Dispositions made and not yet sent (they go out with the next call)."""
        return len(self._waiting)

    def has(self, tool: str) -> bool:
        return tool in self.tools

    def call(self, tool: str, **args: Any) -> Generator[Step, Any, dict]:
        """Call a tool; returns the parsed observation (``{"error": ...}`` on an error).

        A result the environment paged to the agent's character budget (``truncated`` with
        ``next_offset``) is followed transparently: the kit calls again from ``next_offset`` (for the
        rest of the requested ``limit``) until the page is whole, and returns the pages joined, as the
        unpaged result would read. Every page is a call (``calls_left``)."""
        ahead = self._prefetched.get(_key(tool, args))
        if ahead:
            obs = ahead.pop(0)
            return obs
        obs = yield from self._call_once(tool, args)
        if isinstance(obs, dict) and obs.get("truncated") and "next_offset" in obs and obs.get("page_field") in obs:
            obs = yield from self._follow(tool, args, obs)
        return obs

    def _follow(self, tool: str, args: dict, first: dict) -> Generator[Step, Any, dict]:
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

    def _call_once(self, tool: str, args: dict) -> Generator[Step, Any, dict]:
        return (yield from self._send([Action(tool=tool, args=args)]))[-1]

    def _send(self, actions: list[Action]) -> Generator[Step, Any, list[dict]]:
        """Send ``actions`` in one reply, after the dispositions waiting (whose results are only
        checked for errors); the parsed results of ``actions``."""
        out = self._waiting + actions
        self._waiting = []
        if len(out) == 1:
            texts = [(yield out[0])]
        else:
            got = yield Batch(tuple(out))
            texts = list(got) + [NOT_RUN] * (len(out) - len(got))
        self.calls_left -= len(actions)
        parsed = [self._parse(t) for t in texts]
        return parsed[len(parsed) - len(actions):]

    def _parse(self, text: str) -> dict:
        try:
            obs = json.loads(text)
        except (TypeError, json.JSONDecodeError):
            obs = {"error": "unparseable observation"}
        if isinstance(obs, dict) and "error" in obs:
            self.errors += 1
        return obs

    def _later(self, tool: str, args: dict) -> Generator[Step, Any, dict]:
        """A call whose answer the strategy does not wait for (a disposition): it goes out with the next
        call, or now when parallel replies are off or ``MAX_CALLS_PER_REPLY`` calls are waiting."""
        if not self.parallel:
            return (yield from self._call_once(tool, args))
        self._waiting.append(Action(tool=tool, args=args))
        self.calls_left -= 1
        if len(self._waiting) >= MAX_CALLS_PER_REPLY:
            yield from self.flush()
        return {}

    def take_waiting(self) -> list[Action]:
        """The dispositions waiting, handed over (an agent whose strategy ended sends them itself)."""
        waiting, self._waiting = self._waiting, []
        return waiting

    def flush(self) -> Generator[Step, Any, None]:
        """Send the dispositions waiting now (a strategy about to end without a further call)."""
        if self._waiting:
            self.calls_left += len(self._waiting)  # _send counts them again
            waiting, self._waiting = self._waiting, []
            yield from self._send(waiting)

    def gather(self, calls: Sequence[tuple[str, dict]]) -> Generator[Step, Any, list[dict]]:
        """Make independent ``calls`` ((tool, args) pairs: reads whose arguments do not depend on one
        another's results) in as few replies as ``MAX_CALLS_PER_REPLY`` allows, following paged
        results as ``call`` does; their results in order. One at a time when parallel replies are off."""
        results: list[dict] = []
        step = 1 if not self.parallel else max(1, MAX_CALLS_PER_REPLY - len(self._waiting))
        i = 0
        while i < len(calls):
            chunk = list(calls[i:i + step])
            got = yield from self._send([Action(tool=t, args=a) for t, a in chunk])
            for (tool, args), obs in zip(chunk, got):
                if isinstance(obs, dict) and obs.get("truncated") and "next_offset" in obs and obs.get("page_field") in obs:
                    obs = yield from self._follow(tool, args, obs)
                results.append(obs)
            i += len(chunk)
            step = 1 if not self.parallel else MAX_CALLS_PER_REPLY
        return results

    def prefetch(self, calls: Sequence[tuple[str, dict]]) -> Generator[Step, Any, None]:
        """Make ``calls`` now, in as few replies as allowed (``gather``), and keep their results: the next
        ``call`` with the same tool and arguments takes its result from here instead of calling."""
        for (tool, args), obs in zip(calls, (yield from self.gather(calls))):
            self._prefetched.setdefault(_key(tool, args), []).append(obs)

    def ledger(self, filters: list[dict] | None = None, columns: list[str] | None = None,
               max_pages: int = 20) -> Generator[Step, Any, list[dict]]:
        """All ledger lines matching ``filters`` (paging through ``query_ledger``)."""
        return (yield from self.ledgers([(filters, columns)], max_pages=max_pages))[0]

    def ledgers(self, queries: Sequence[tuple[list[dict] | None, list[str] | None]],
                max_pages: int = 20) -> Generator[Step, Any, list[list[dict]]]:
        """All ledger lines matching each (filters, columns) query: the first pages of every query in
        one reply (``gather``), then the further pages of each."""
        def args(filters: list[dict] | None, columns: list[str] | None, offset: int) -> dict:
            return {"filters": filters or [], "columns": columns, "limit": 500, "offset": offset}

        firsts = yield from self.gather([("query_ledger", args(f, c, 0)) for f, c in queries])
        out: list[list[dict]] = []
        for (f, c), obs in zip(queries, firsts):
            rows = list(obs.get("rows", []))
            for _ in range(max_pages - 1):
                if "next_offset" not in obs:
                    break
                obs = yield from self.call("query_ledger", **args(f, c, obs["next_offset"]))
                rows += obs.get("rows", [])
            out.append(rows)
        return out

    def master(self, table: str) -> Generator[Step, Any, list[dict]]:
        """Every row of the master table ``table``."""
        return (yield from self.masters([table]))[0]

    def masters(self, tables: Sequence[str]) -> Generator[Step, Any, list[list[dict]]]:
        """Every row of each master table: the first pages in one reply (``gather``), then the rest."""
        firsts = yield from self.gather([("get_master_data", {"table": t, "limit": 500, "offset": 0}) for t in tables])
        out: list[list[dict]] = []
        for table, obs in zip(tables, firsts):
            rows = list(obs.get("rows", []))
            while "next_offset" in obs:
                obs = yield from self.call("get_master_data", table=table, limit=500, offset=obs["next_offset"])
                rows += obs.get("rows", [])
            out.append(rows)
        return out

    def documents(self, doc_type: str | None = None) -> Generator[Step, Any, list[dict]]:
        """The document listing (of ``doc_type``, or every document)."""
        return (yield from self.listings([doc_type]))[0]

    def listings(self, doc_types: Sequence[str | None]) -> Generator[Step, Any, list[list[dict]]]:
        """The document listing of each of ``doc_types`` (None: every document): the first pages in one
        reply (``gather``), then the rest."""
        def args(doc_type: str | None, offset: int) -> dict:
            return {"limit": 200, "offset": offset, **({"doc_type": doc_type} if doc_type else {})}

        firsts = yield from self.gather([("list_documents", args(t, 0)) for t in doc_types])
        out: list[list[dict]] = []
        for doc_type, obs in zip(doc_types, firsts):
            docs = list(obs.get("documents", []))
            while "next_offset" in obs:
                obs = yield from self.call("list_documents", **args(doc_type, obs["next_offset"]))
                docs += obs.get("documents", [])
            out.append(docs)
        return out

    def open_all(self, doc_ids: Sequence[str]) -> Generator[Step, Any, dict[str, str]]:
        """The bodies of ``doc_ids`` by id, opened in as few replies as allowed (``gather``)."""
        ids = list(dict.fromkeys(doc_ids))
        got = yield from self.gather([("open_document", {"doc_id": d}) for d in ids])
        return {d: obs.get("body", "") for d, obs in zip(ids, got)}

    def find_document(self, query: str, *title_words: str, require_title: bool = False) -> Generator[Step, Any, str | None]:
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

    def open(self, doc_id: str) -> Generator[Step, Any, dict]:
        return (yield from self.call("open_document", doc_id=doc_id))

    def flag(self, entry_id: str, criteria: str, evidence: list[str], rationale: str,
             amount: float | None = None) -> Generator[Step, Any, dict]:
        """Flag ``entry_id``; the call goes out with the next one (``_later``)."""
        args: dict[str, Any] = {"entry_id": entry_id, "criteria": criteria, "evidence": evidence, "rationale": rationale}
        if amount is not None:
            args["amount"] = round(float(amount), 2)
        return (yield from self._later("flag_entry", args))

    def clear(self, entry_id: str, evidence: list[str], rationale: str) -> Generator[Step, Any, dict]:
        """Clear ``entry_id``; the call goes out with the next one (``_later``)."""
        return (yield from self._later("clear_entry", {"entry_id": entry_id, "evidence": evidence,
                                                       "rationale": rationale}))

    def submit(self, summary: str):
        return (yield from self.call("submit", summary=summary))

    def criteria(self) -> list[str]:
        return re.findall(r"^\s+- ([A-Z_]+):", self.brief, flags=re.M)


#: fields the environment adds to a paged result (``jeval_ray.tools.fit_result``)
_PAGING_KEYS = ("truncated", "page_field", "returned", "note", "next_offset")




def _key(tool: str, args: dict) -> str:
    return tool + json.dumps(args, sort_keys=True, default=str)


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


__all__ = ["MAX_CALLS_PER_REPLY", "Batch", "Kit", "Step", "Strategy", "entries_of"]
