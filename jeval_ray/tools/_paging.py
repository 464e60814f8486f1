"""Paging: one function that fits any tool result to a character budget as valid JSON.

``fit_result(tool, offset, payload, budget)`` returns ``payload`` unchanged when its compact JSON
is within ``budget`` characters (or the budget is None). Otherwise it shrinks the tool's page field
(``PAGE_FIELDS``: the rows, documents or groups a result lists, or a document's body) to the longest
prefix that fits, and says how to get the rest:

- ``truncated: true``, ``offset`` (where the page starts), ``returned`` (items or characters kept),
  ``next_offset`` (call the tool again with ``offset`` set to it), ``total`` (items or characters in
  all), ``page_field`` (which field was cut) and ``note``: the same in words a model understands.

A list field keeps whole items; a dict field (``compute_stats``'s groups) keeps whole entries in
order; a text field (a document's body) keeps a character window, ended at a line break when one
falls in its second half. Concatenating the pages (following ``next_offset``) gives the whole.
Whatever still does not fit (a tool without a page field, or a budget smaller than one item) is cut
generically: the largest list, dict or text is shortened and the note says to narrow the call. The
result is valid JSON of at most ``budget`` characters for any budget >= ``MIN_BUDGET``.
"""

from __future__ import annotations

import json
from typing import Any

#: tool -> the field of its result that pages (the tool takes an ``offset`` into it)
PAGE_FIELDS: dict[str, str] = {
    "list_documents": "documents",
    "search_documents": "documents",
    "open_document": "body",
    "query_ledger": "rows",
    "get_master_data": "rows",
    "get_balances": "rows",
    "compute_stats": "groups",
}
#: the smallest budget the guarantee (valid JSON within the budget) holds for
MIN_BUDGET = 600
_UNITS = {"body": "characters"}


def size(payload: Any) -> int:
    """Characters of ``payload`` as the environment sends it (compact JSON, UTF-8 text unescaped)."""
    return len(_dump(payload))


def _dump(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"), default=str, ensure_ascii=False)


def _take(value: Any, n: int) -> Any:
    if isinstance(value, dict):
        return dict(list(value.items())[:n])
    return value[:n]


def _largest_fit(build, hi: int, budget: int) -> int:
    """The largest n in [0, hi] with ``size(build(n)) <= budget`` (sizes grow with n); -1 if none."""
    if size(build(0)) > budget:
        return -1
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(build(mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _window_end(text: str, start_n: int) -> int:
    """End a character window at a line break in its second half, when there is one (sections stay whole)."""
    if start_n >= len(text):
        return len(text)
    cut = text.rfind("\n", start_n // 2, start_n)
    return cut + 1 if cut > 0 else start_n


def fit_result(tool: str, offset: int, payload: dict, budget: int | None) -> dict:
    """``payload`` (the result of ``tool`` called with ``offset``) fitted to ``budget`` characters."""
    if budget is None or size(payload) <= budget:
        return payload
    field = PAGE_FIELDS.get(tool)
    value = payload.get(field) if field else None
    if isinstance(value, (list, dict, str)) and len(value):
        paged = _page(tool, field, offset, payload, value, budget)
        if paged is not None:
            return paged
    return _cut_generic(tool, payload, budget)


def _page(tool: str, field: str, offset: int, payload: dict, value, budget: int) -> dict | None:
    text = isinstance(value, str)
    unit = _UNITS.get(field, field)
    if text:
        total = offset + len(value)  # a document's body from ``offset`` on
    else:
        total = _total(payload, offset + len(value))
    base = {k: v for k, v in payload.items() if k != field}

    def build(n: int) -> dict:
        last = offset + n
        note = (f"Result cut to fit the {budget:,}-character limit on one tool result: {n:,} {unit} shown from offset "
                f"{offset:,}, of {total:,}. For the rest, call {tool} again with the same arguments and offset={last}"
                + ("." if text else f"; or narrow the call (filters, fewer columns, a smaller limit)."))
        return {**base, field: value[:n] if text else _take(value, n), "truncated": True, "page_field": field,
                "offset": offset, "returned": n, "next_offset": last, "total": total, "note": note}

    n = _largest_fit(build, len(value), budget)
    if n <= 0:
        return None
    if text:
        n = _window_end(value, n)
    return build(n)


def _total(payload: dict, fallback: int) -> int:
    for key in ("total", "total_rows", "groups_total"):
        if isinstance(payload.get(key), int):
            return payload[key]
    return fallback


def _cut_generic(tool: str, payload: dict, budget: int) -> dict:
    """Shorten the largest list, dict or text of ``payload`` until it fits; the note says what was cut."""
    out = json.loads(_dump(payload))
    out.pop("next_offset", None)  # the page it pointed past may be cut: the note says to narrow the call instead
    cut: list[str] = []
    for _ in range(50):
        out["truncated"] = True
        out["note"] = (f"Result of {tool} cut to fit the {budget:,}-character limit on one tool result"
                       + (f" ({', '.join(cut[:5])} shortened)" if cut else "") + "; narrow the call to see all of it.")
        if size(out) <= budget:
            return out
        key = max((k for k, v in out.items() if k not in ("truncated", "note") and isinstance(v, (list, dict, str))
                   and len(v)), key=lambda k: size(out[k]), default=None)
        if key is None:
            break
        value = out[key]
        if key not in cut:
            cut.append(key)

        def build(n: int, key=key, value=value) -> dict:
            out[key] = _take(value, n)
            return out

        n = _largest_fit(build, len(value) - 1, budget)
        out[key] = _take(value, max(n, 0))
        if n >= 0:
            out["note"] = (f"Result of {tool} cut to fit the {budget:,}-character limit on one tool result "
                           f"({', '.join(cut[:5])} shortened); narrow the call to see all of it.")
            if size(out) <= budget:
                return out
    return {"truncated": True, "note": f"Result of {tool} too large for the {budget:,}-character limit; narrow the call."}


__all__ = ["MIN_BUDGET", "PAGE_FIELDS", "fit_result", "size"]
