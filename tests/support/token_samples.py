"""Text a model reads, by kind of content, from real worlds: for token-count calibration and its tests
(tests/test_tokens.py) and the benchmark (bench/bench_tokens.py).

Kinds: ``ledger`` (``query_ledger`` pages, the default 100 rows), ``documents`` (``list_documents``
and ``open_document`` results), ``master`` (``get_master_data`` tables), ``brief`` (the system
prompt) and ``schemas`` (the tool schemas sent with every request, as compact JSON). Observations
are the environment's own text (what the agent puts in its tool messages).
"""

from __future__ import annotations

import json

from jeval_ray.env import JEEnv

KINDS = ("ledger", "documents", "master", "brief", "schemas")
MASTER = ("accounts", "users", "vendors", "vendor_changes", "customers")


def content_samples(tasks: tuple[str, ...], seed: int = 0, documents: int = 6) -> dict[str, list[str]]:
    """``{kind: [text, ...]}`` from one episode's reset and reads on each of ``tasks`` at ``seed``."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for task in tasks:
        env = JEEnv(task)
        brief, info = env.reset(seed)
        out["brief"].append(brief)
        out["schemas"].append(json.dumps(info["tools"], separators=(",", ":")))

        def read(tool: str, **args) -> str:
            return env.step({"tool": tool, "args": args})[0]

        out["ledger"].append(read("query_ledger", limit=100))
        out["ledger"].append(read("query_ledger", limit=100, offset=500))
        listing = read("list_documents", limit=50)
        out["documents"].append(listing)
        for doc in json.loads(listing).get("documents", [])[:documents]:
            out["documents"].append(read("open_document", doc_id=doc["doc_id"]))
        for table in MASTER:
            out["master"].append(read("get_master_data", table=table, limit=100))
    return out
