"""The random agent: looks around a little, then flags and clears entries at random."""

from __future__ import annotations

from jeval_ray.protocol.kit import Kit


def random_strategy(kit: Kit):
    """A floor for the leaderboard: random reading, random dispositions, sometimes made-up evidence."""
    rng = kit.rng
    rows = (yield from kit.call("query_ledger", filters=[{"column": "line_no", "op": "eq", "value": 1}],
                                columns=["entry_id"], limit=500)).get("rows", [])
    ids = [r["entry_id"] for r in rows] or ["1000000001"]
    crit = kit.criteria() or ["UNBALANCED"]
    opened: list[str] = []
    docs = (yield from kit.call("list_documents", limit=50)).get("documents", []) if kit.has("list_documents") else []
    for d in docs[: int(rng.integers(0, 4))]:
        yield from kit.open(d["doc_id"])
        opened.append(d["doc_id"])
    budget = max(3, kit.calls_left - 1)
    for _ in range(int(rng.integers(2, max(3, budget // 2)))):
        eid = str(ids[int(rng.integers(0, len(ids)))])
        evidence = list(rng.choice(opened, size=min(len(opened), 1), replace=False)) if opened and rng.random() < 0.7 else []
        if rng.random() < 0.25:
            evidence.append(f"DOC-{int(rng.integers(1, 60)):04d}")
        if rng.random() < 0.6:
            yield from kit.flag(eid, str(rng.choice(crit)), evidence, f"Entry {eid} looks irregular.")
        else:
            yield from kit.clear(eid, evidence, f"Entry {eid} looks fine.")
        if kit.calls_left <= 1:
            break
    yield from kit.submit("Random review finished.")
