"""The response cache: a model call answered once is never paid for again (opt-in).

A sweep with ``execution.response_cache`` (or ``--cache DIR|URI``) keeps every successful model
response in a directory on local disk or any pyarrow filesystem (``s3://bucket/prefix``, so a
cluster's nodes share it through the output's storage). A call whose key is found is answered
from the cache: it bypasses the rate limiter, costs 0, keeps the token counts of the original
answer and is marked as a hit (``steps.cache_hit``). A crashed episode replays its calls from the
cache up to where it stopped; a new run over a finished grid makes no endpoint call at all.

The key is the sha256 of canonical JSON (sorted keys, no spaces) of the provider, the base URL,
the request body (model, messages, tools, tool choice, sampling and reasoning parameters,
``response_format``, ``max_tokens``, ``extra_body``) with its cache markers (``cache_control``)
removed, the call's logical seed (also where the provider takes none, or ``send_seed`` is off)
and a sample index (so deliberate re-sampling is never silently replayed). Auth is in headers,
never in the key or the entry.

Entries are one JSON file each, ``<root>/<key[:2]>/<key>.json``, written atomically (a hidden temp
name renamed into place on local disks; an object store's put is atomic). An entry that cannot be
read, is not JSON or does not hold its own key is a miss (counted in ``corrupt``), never a crash.
``python -m jeval_ray.cache list|prune`` inspects and trims a cache.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from jeval_ray._fs import is_local, resolve_fs

log = logging.getLogger("jeval_ray.cache")

#: Version of the key and entry format: a change starts a fresh cache.
CACHE_FORMAT = 1
#: Temp files older than this are leftovers of a writer that died (``prune`` removes them).
STALE_TMP_S = 3600.0


def strip_cache_markers(obj: Any) -> Any:
    """``obj`` without any ``cache_control`` key, at any depth (prompt-cache breakpoints change no answer)."""
    if isinstance(obj, dict):
        return {k: strip_cache_markers(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [strip_cache_markers(v) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(provider: str, base_url: str, body: dict[str, Any], seed: int | None, sample_index: int = 0) -> str:
    """The sha256 (hex) key of one request (see the module docstring)."""
    ident = {"format": CACHE_FORMAT, "provider": provider, "base_url": base_url, "body": strip_cache_markers(body),
             "seed": seed, "sample": int(sample_index)}
    return hashlib.sha256(canonical_json(ident).encode()).hexdigest()


@dataclass
class CacheEntryInfo:
    """One entry as ``list`` shows it."""

    key: str
    path: str
    size: int
    created_at: str | None
    provider: str | None
    model: str | None
    ok: bool  # readable and holding its own key


class ResponseCache:
    """A response cache at ``root`` (a local directory or a pyarrow filesystem URI)."""

    def __init__(self, root: str, filesystem: pafs.FileSystem | None = None) -> None:
        self.root = root
        self.fs, self.path = resolve_fs(root, filesystem)
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self.writes = 0

    def check(self) -> None:
        """Raise ``OSError`` when the cache cannot be used (writes nothing): on a local disk the nearest
        existing folder of the path must be a writable directory; elsewhere the location must answer."""
        if is_local(self.fs):
            import os

            here = self.path
            while not os.path.exists(here):
                here = os.path.dirname(here)
            if not os.path.isdir(here) or not os.access(here, os.W_OK | os.X_OK):
                raise OSError(f"{here!r} is not a writable directory")
        else:
            self.fs.get_file_info(self.path)

    def _file(self, key: str) -> str:
        return f"{self.path}/{key[:2]}/{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry of ``key`` (``{"response": <the endpoint's JSON body>, ...}``) or None."""
        try:
            with self.fs.open_input_stream(self._file(key)) as f:
                data = f.read()
        except (FileNotFoundError, OSError):
            self.misses += 1
            return None
        try:
            entry = json.loads(data)
            if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("response"), dict):
                raise ValueError("not an entry of this key")
        except ValueError as exc:
            self.corrupt += 1
            self.misses += 1
            log.warning("response cache: ignoring unreadable entry %s (%s)", key[:16], exc)
            return None
        self.hits += 1
        return entry

    def put(self, key: str, response: dict[str, Any], **meta: Any) -> None:
        """Store ``response`` under ``key`` atomically. A failed write is logged, never raised."""
        entry = {"key": key, "format": CACHE_FORMAT, "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                 **meta, "response": response}
        data = canonical_json(entry).encode()
        final = self._file(key)
        try:
            self.fs.create_dir(final.rpartition("/")[0], recursive=True)
            if is_local(self.fs):
                d, _, base = final.rpartition("/")
                tmp = f"{d}/.{base}.{uuid.uuid4().hex[:8]}.tmp"
                with self.fs.open_output_stream(tmp) as f:
                    f.write(data)
                self.fs.move(tmp, final)
            else:
                with self.fs.open_output_stream(final) as f:
                    f.write(data)
            self.writes += 1
        except OSError as exc:
            log.warning("response cache: could not write entry %s: %s", key[:16], exc)

    # -- inspection and pruning (python -m jeval_ray.cache) ---------------------------------------------

    def _files(self) -> Iterator[pafs.FileInfo]:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path, recursive=True, allow_not_found=True))
        except FileNotFoundError:
            return
        for info in infos:
            if info.type == pafs.FileType.File:
                yield info

    def entries(self) -> Iterator[CacheEntryInfo]:
        """Every entry file (temp files left out), read to check it."""
        for info in self._files():
            name = info.base_name
            if not name.endswith(".json") or name.startswith("."):
                continue
            key = name[: -len(".json")]
            entry = self.get(key)
            yield CacheEntryInfo(key=key, path=info.path, size=int(info.size or 0),
                                 created_at=(entry or {}).get("created_at"), provider=(entry or {}).get("provider"),
                                 model=(entry or {}).get("model"), ok=entry is not None)

    def prune(self, *, older_than_s: float | None = None, everything: bool = False, now: float | None = None) -> dict:
        """Delete unreadable entries, stale temp files and (``older_than_s``) old entries, or ``everything``.

        Returns counts: ``{"deleted": n, "corrupt": n, "tmp": n, "kept": n}``."""
        now = time.time() if now is None else now
        out = {"deleted": 0, "corrupt": 0, "tmp": 0, "kept": 0}
        for info in list(self._files()):
            name = info.base_name
            mtime = info.mtime.timestamp() if info.mtime is not None else now
            if name.startswith(".") and name.endswith(".tmp"):
                if everything or now - mtime > STALE_TMP_S:
                    self.fs.delete_file(info.path)
                    out["tmp"] += 1
                continue
            if not name.endswith(".json"):
                continue
            entry = None if everything else self.get(name[: -len(".json")])
            if everything:
                why = "deleted"
            elif entry is None:
                why = "corrupt"
            elif older_than_s is not None and now - _created(entry, mtime) > older_than_s:
                why = "deleted"
            else:
                out["kept"] += 1
                continue
            self.fs.delete_file(info.path)
            out[why] += 1
        return out

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "corrupt": self.corrupt, "writes": self.writes}


def _created(entry: dict, fallback: float) -> float:
    try:
        return dt.datetime.fromisoformat(entry["created_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return fallback


__all__ = ["CACHE_FORMAT", "CacheEntryInfo", "ResponseCache", "cache_key", "canonical_json", "strip_cache_markers"]
