"""``world_hash``: sha256 of a canonical serialisation of a world (same inputs, same hash, anywhere)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa


#: values widened to 8 bytes a block at a time: a block stays in cache, where widening a whole
#: million-row column at once writes (and first touches) tens of megabytes per column
_BLOCK = 1 << 16


def _update_i8(h: "hashlib._Hash", a: np.ndarray, minus: int = 0) -> None:
    """``h.update((a - minus).astype("<i8").tobytes())``, block by block (the same bytes)."""
    for i in range(0, len(a), _BLOCK):
        block = a[i:i + _BLOCK].astype("<i8")
        if minus:
            block -= minus
        h.update(block)


def _column_bytes(h: "hashlib._Hash", col: pa.ChunkedArray) -> None:
    # arrays go to ``h.update`` as buffers, not through ``tobytes`` (a copy of every column of the world)
    if isinstance(col, pa.ChunkedArray):
        arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    else:
        arr = col
    h.update(str(arr.type).encode())
    h.update(len(arr).to_bytes(8, "little"))
    if arr.null_count:
        h.update(np.asarray(arr.is_null(), dtype=np.uint8))
        if not pa.types.is_null(arr.type):
            default = "" if pa.types.is_string(arr.type) else (False if pa.types.is_boolean(arr.type) else 0)
            arr = arr.fill_null(pa.scalar(default, arr.type))
    if pa.types.is_string(arr.type):
        # offsets relative to the first, then exactly the used data bytes (padding ignored)
        buf = arr.buffers()
        offs = np.frombuffer(buf[1], dtype="<i4", count=len(arr) + 1, offset=arr.offset * 4)
        _update_i8(h, offs, int(offs[0]))
        h.update(memoryview(buf[2])[offs[0] : offs[-1]])
    elif pa.types.is_null(arr.type):
        return
    elif pa.types.is_date32(arr.type) or pa.types.is_timestamp(arr.type):
        ints = arr.view(pa.int32() if pa.types.is_date32(arr.type) else pa.int64())
        _update_i8(h, np.asarray(ints))
    elif pa.types.is_boolean(arr.type):
        h.update(np.ascontiguousarray(np.asarray(arr, dtype=np.uint8)))
    else:
        # numpy's own dtype for the column (``to_pandas_dtype`` goes through pandas)
        a = np.asarray(arr)
        h.update(np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False)))


def table_digest(h: "hashlib._Hash", table: pa.Table) -> None:
    h.update(json.dumps(table.column_names).encode())
    for name in table.column_names:
        _column_bytes(h, table.column(name))


def world_hash(world) -> str:
    """sha256 over task, seed, knobs, ledger, master data, documents and the defect/decoy ledgers."""
    h = hashlib.sha256()
    head = {"task_id": world.task_id, "seed": world.seed, "knobs": world.knobs, "facts": world.facts}
    h.update(json.dumps(head, sort_keys=True, default=str).encode())
    table_digest(h, world.ledger)
    for name in sorted(world.master):
        h.update(name.encode())
        table_digest(h, world.master[name])
    docs = [[d.doc_id, d.doc_type, d.title, d.date, d.body] for d in world.documents]
    h.update(json.dumps(docs).encode())
    # a defect's other accepted amounts are hashed only where it has any (the hashes of other worlds stay)
    h.update(json.dumps([list(map(str, (d.entry_id, d.defect_type, d.criteria, d.required_evidence, d.misstatement,
                                        *([d.also_accepted] if d.also_accepted else ())))) for d in world.defects]).encode())
    h.update(json.dumps([[d.entry_id, d.decoy_type, list(d.clearing_evidence)] for d in world.decoys]).encode())
    h.update(json.dumps(list(world.hidden_entries)).encode())
    return h.hexdigest()
