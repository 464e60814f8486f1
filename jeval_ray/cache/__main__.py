"""``python -m jeval_ray.cache list|prune DIR|URI``: inspect and trim a response cache.

``list`` prints one line per entry (key, created, provider, model, bytes; ``CORRUPT`` for an entry
that cannot be read) and a total; ``--json`` prints JSON lines instead. ``prune`` deletes unreadable
entries and temp files left by a writer that died, plus entries older than ``--older-than DAYS``,
or every entry with ``--all``. Exit code 2 on a bad argument or an unreachable cache.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from jeval_ray.cache import ResponseCache


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jeval_ray.cache", description="Inspect and trim a response cache.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="list the entries")
    ls.add_argument("root", metavar="DIR|URI")
    ls.add_argument("--json", action="store_true", help="JSON lines, one per entry")
    pr = sub.add_parser("prune", help="delete unreadable entries, stale temp files and old entries")
    pr.add_argument("root", metavar="DIR|URI")
    group = pr.add_mutually_exclusive_group()
    group.add_argument("--older-than", type=float, metavar="DAYS", help="also delete entries older than DAYS")
    group.add_argument("--all", action="store_true", help="delete every entry")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "older_than", None) is not None and args.older_than < 0:
        print("error: --older-than: must be >= 0 days", file=sys.stderr)
        return 2
    try:
        cache = ResponseCache(args.root)
        if args.command == "list":
            n = size = bad = 0
            for e in cache.entries():
                n, size, bad = n + 1, size + e.size, bad + (not e.ok)
                if args.json:
                    print(json.dumps(asdict(e)))
                else:
                    state = "" if e.ok else "  CORRUPT"
                    print(f"{e.key[:16]}  {e.created_at or '-':32}  {e.provider or '-':9}  {e.model or '-':24}  "
                          f"{e.size:>8}{state}")
            if not args.json:
                print(f"{n} entries, {size} bytes, {bad} unreadable", file=sys.stderr)
            return 0
        older = args.older_than * 86400.0 if args.older_than is not None else None
        counts = cache.prune(older_than_s=older, everything=args.all)
        print(json.dumps(counts))
        return 0
    except (OSError, ValueError) as exc:
        print(f"error: cache {args.root!r}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
