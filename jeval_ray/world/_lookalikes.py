"""The naive rule's catches on a world: where the prompt-injection condition puts its look-alike notes.

In the prompt-injection condition a share of the naive rule's candidates (defects, decoys and the
unplanted look-alikes it also catches) carry an injected instruction, the same share of each, so the
injection is noise and never a label. The builder knows its defects and decoys; the look-alikes are
whatever the task's own naive strategy flags beyond them, so this module plays that strategy on the
world without injection, in process, through the environment's tools (unpaged, no step budget).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.builder import World
from jeval_ray.protocol.kit import Batch, Kit
from jeval_ray.tasks import get_task, task_value
from jeval_ray.tools import TOOLS, EpisodeState, ToolError, tool_schemas


def _run(state: EpisodeState, tool: str, args: dict) -> str:
    t = TOOLS[tool]
    try:
        payload = t.run(state, t.args.model_validate(args))
    except ToolError as exc:
        payload = {"error": str(exc)}
    return json.dumps(payload, separators=(",", ":"), default=str, ensure_ascii=False)


def naive_flags(world: World) -> tuple[str, ...]:
    """The entry ids the task's naive strategy flags on ``world``, in the order it flags them."""
    spec = get_task(world.task_id)
    kit = Kit("", tool_schemas(spec, spec.tools), world.seed, np.random.default_rng(0), task_id=spec.id,
              step_budget=1_000_000)
    state = EpisodeState(world, spec.criteria_codes)
    flagged: list[str] = []
    gen = task_value(spec.id).naive(kit)
    try:
        step = next(gen)
        while True:
            actions = step.actions if isinstance(step, Batch) else (step,)
            texts = []
            for a in actions:
                args = a.args if isinstance(a.args, dict) else {}
                if a.tool == "flag_entry":
                    flagged.append(str(args.get("entry_id")))
                texts.append(_run(state, a.tool, dict(args)))
            step = gen.send(texts if isinstance(step, Batch) else texts[0])
    except StopIteration:
        pass
    return tuple(dict.fromkeys(flagged))


def lookalikes(world: World) -> tuple[tuple[str, str, str], ...]:
    """The naive rule's unplanted catches on ``world`` (flagged by it, neither defect nor decoy, in the
    listing) as (entry id, reference, posting date), in the order it flags them."""
    keyed = {d.entry_id for d in world.defects} | {d.entry_id for d in world.decoys}
    flagged = [e for e in naive_flags(world) if e not in keyed]
    heads = {r["entry_id"]: r for r in world.ledger.filter(
        pc.is_in(world.ledger.column("entry_id"), value_set=pa.array(flagged, pa.string()))).to_pylist()}
    return tuple((e, str(heads[e]["reference"] or ""), heads[e]["posting_date"].isoformat())
                 for e in flagged if e in heads)
