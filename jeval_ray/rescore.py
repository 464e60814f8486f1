"""``python -m jeval_ray.rescore <run path or URI> --config judges.yaml``: judge a run again, without re-playing it.

Each completed episode's judge packet is rebuilt from what the run stored and what is deterministic:
the world is generated again from the episode's run-config contract (task, seed, knobs), the
dispositions come from the ``dispositions`` rows and the submission summary from the ``submit``
step. The void flags are restored exactly: an evidence id is taken as opened just before the first
non-void disposition citing it, which voids exactly the dispositions stored as fabricated.

The jury of ``--config`` (a ``scoring`` block: rubric, judges, judge models, re-asks, budget) then
judges every episode, and each judgment is **appended** to the ``judgments`` dataset with its
``jury`` id and ``scored_by = 'rescore'``: nothing is overwritten, and the manifest's
``judging.juries`` gains the jury with its agreement and calibration. A judgment is keyed by
``JUDGMENT_KEY`` (episode, attempt, judge, judge index, judge model, rubric, prompt hash, jury); keys
already holding an ``ok`` row or an ``invalid_output`` unscored row are skipped, so an interrupted
re-score resumes where it stopped and a second identical one adds nothing. (Rows left unscored by
an endpoint failure are judged again.) Once ``judge_budget_usd`` is spent, the remaining judgments
are not made and not written: running again with a higher budget continues.

Exit codes: 0 done, 2 bad input (unknown run, invalid config, missing key), 1 could not go on.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from collections import defaultdict
from pathlib import Path

from pydantic import ValidationError, model_validator

from jeval_ray.errors import ConfigError
from jeval_ray.records.schemas import JUDGMENT_KEY
from jeval_ray.sweep.config import ScoringConfig, _pydantic_message, check_judges, parse_config_text


class RescoreConfig(ScoringConfig):
    """The jury of a re-score: the sweep config's ``scoring`` fields (weights excluded) plus concurrency."""

    concurrency: int = 8
    flush_episodes: int = 32

    @model_validator(mode="after")
    def _no_weights(self) -> "RescoreConfig":
        if self.weights is not None or self.task_weights:
            raise ValueError("a re-score adds judgments only; weights belong to the sweep config (remove them)")
        if self.concurrency < 1 or self.flush_episodes < 1:
            raise ValueError("concurrency and flush_episodes must be >= 1")
        return self


def load_rescore_config(path: str, *, check_env: bool = True) -> RescoreConfig:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config: file {path!r} does not exist. Fix: pass the path of a YAML or JSON judges config.")
    data = parse_config_text(p.read_text(encoding="utf-8"), str(p))
    data = data.get("scoring", data)  # a whole sweep config's scoring block works too
    try:
        cfg = RescoreConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_pydantic_message(exc)}") from None
    from jeval_ray.scoring import load_rubric

    try:
        load_rubric(cfg.judge)
    except KeyError:
        raise ConfigError(f"{path}: field 'judge': unknown rubric {cfg.judge!r}. Fix: use global_rubric_v1.") from None
    try:
        check_judges(cfg, check_env=check_env, where="")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return cfg


# ---------------------------------------------------------------------------- packets
def rebuild_packet(episode: dict, dispositions: list[dict], summary: str) -> dict:
    """The judge packet of a stored episode (see the module docstring)."""
    from jeval_ray.contract import RunConfigContract, knobs_of
    from jeval_ray.env import JEEnv
    from jeval_ray.tools._tools import Disposition
    from jeval_ray.scoring import build_judge_packet

    contract = RunConfigContract.model_validate_json(episode["run_config"])
    env = JEEnv(contract.task_id, knobs_of(contract), tuple(contract.tools_withheld), step_budget=contract.step_budget)
    brief, _info = env.reset(contract.seed)
    state = env.state
    dispositions = sorted(dispositions, key=lambda d: d["step_idx"])
    for d in dispositions:
        state.dispositions.append(Disposition(step_idx=d["step_idx"], entry_id=d["entry_id"], decision=d["decision"],
                                              evidence=tuple(d["evidence"] or ()), rationale=d["rationale"] or "",
                                              criteria=d["criteria"], amount=d["amount"]))
        if not d["fabricated"]:
            for e in d["evidence"] or ():
                state.opened.setdefault(e, d["step_idx"] - 1)
    state.summary = summary
    return build_judge_packet(env.spec, env.world, state, brief)


def _read(run_path: str, fs) -> tuple[list[dict], dict, dict, set]:
    """Completed episodes, their dispositions and summaries, and the keys of definitive judgments."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from jeval_ray.store.reader import kept_attempts, open_dataset, read_dataset, read_raw

    eps = read_dataset(run_path, "episodes", filesystem=fs).to_pylist()
    eps = [e for e in eps if e["status"] == "completed"]
    disps: dict[tuple, list[dict]] = defaultdict(list)
    for d in read_dataset(run_path, "dispositions", filesystem=fs).to_pylist():
        disps[(d["episode_id"], d["attempt"])].append(d)
    summaries: dict[tuple, str] = {}
    steps = open_dataset(run_path, "steps", filesystem=fs)
    if steps is not None:
        t = steps.to_table(columns=["episode_id", "attempt", "task_id", "model", "step_idx", "args"],
                           filter=ds.field("tool") == "submit")
        kept = kept_attempts(read_raw(run_path, "episodes", columns=["episode_id", "attempt", "status"], filesystem=fs))
        kept_keys = set(zip(kept["episode_id"].to_pylist(), kept["attempt"].to_pylist()))
        for s in t.to_pylist():
            if (s["episode_id"], s["attempt"]) not in kept_keys:
                continue
            try:
                summaries[(s["episode_id"], s["attempt"])] = str(json.loads(s["args"] or "{}").get("summary") or "")
            except (ValueError, AttributeError):
                summaries[(s["episode_id"], s["attempt"])] = ""
    done = set()
    jt = read_raw(run_path, "judgments", filesystem=fs)
    if jt.num_rows:
        definitive = pc.or_(pc.equal(jt["status"], "ok"), pc.starts_with(pc.fill_null(jt["error"], ""), "invalid_output"))
        for r in jt.filter(pc.fill_null(definitive, False)).select(list(JUDGMENT_KEY)).to_pylist():
            done.add(tuple(r[k] for k in JUDGMENT_KEY))
    return eps, disps, summaries, done


# ---------------------------------------------------------------------------- the run
async def _rescore(run_path: str, fs, cfg: RescoreConfig) -> dict:
    from jeval_ray.records import EpisodeKeys, judgment_rows
    from jeval_ray.scoring.llm_judge import judge_seed
    from jeval_ray.store.writer import RunWriter
    from jeval_ray.sweep.judges import JudgePanel, assign_judge, jury_id, local_limiter

    judging = cfg.judging()
    jury = jury_id(judging)
    eps, disps, summaries, done = _read(run_path, fs)
    panel = JudgePanel(judging, local_limiter)
    writer = RunWriter(fs, run_path, flush_episodes=cfg.flush_episodes, flush_seconds=30.0)
    stats = {"jury": jury, "episodes": len(eps), "added": 0, "skipped": 0, "left_budget": 0, "ok": 0, "unscored": 0,
             "failed": 0, "cost_usd": 0.0}
    gate = asyncio.Semaphore(cfg.concurrency)
    cap = cfg.judge_budget_usd

    async def one(e: dict) -> None:
        key = (e["episode_id"], e["attempt"])
        contract = json.loads(e["run_config"])
        n = cfg.judges_per_episode or int(contract["scoring"]["judges_per_episode"])
        async with gate:
            packet = rebuild_packet(e, disps.get(key, []), summaries.get(key, ""))
            made = {}
            for idx in range(n):
                name = assign_judge(cfg.judges, e["episode_id"], idx)
                seed = judge_seed(e["episode_id"], idx)
                phash = panel.llm(name).request(packet, cfg.judge, seed)[3] if panel.is_llm(name) else None
                model = name if panel.is_llm(name) else None
                ident = {"episode_id": key[0], "attempt": key[1], "judge": name, "judge_idx": idx, "judge_model": model,
                         "rubric": cfg.judge, "prompt_hash": phash, "jury": jury}
                if tuple(ident[k] for k in JUDGMENT_KEY) in done:
                    stats["skipped"] += 1
                    continue
                if panel.is_llm(name) and cap is not None and stats["cost_usd"] >= cap:
                    stats["left_budget"] += 1
                    continue
                j = await panel.judge(name, packet, rubric=cfg.judge, idx=idx, seed=seed)
                stats["cost_usd"] += j.cost_usd
                stats[j.status] += 1
                made[idx] = j
        if not made:
            return
        keys = EpisodeKeys(e["run_id"], e["episode_id"], e["attempt"], e["task_id"], e["model"], e["seed"], e["condition"])
        rows = []
        for idx, j in sorted(made.items()):
            rows += judgment_rows(keys, [j], jury=jury, scored_by="rescore", first_idx=idx)
        stats["added"] += len(rows)
        writer.add(e["task_id"], e["model"], {}, rows={"judgments": rows})

    try:
        await asyncio.gather(*(one(e) for e in sorted(eps, key=lambda e: (e["episode_id"], e["attempt"]))))
    finally:
        try:
            writer.flush_all()
        finally:
            writer.close()
            await panel.aclose()
    return stats


def _update_manifest(fs, run_path: str, cfg: RescoreConfig, stats: dict, started: dt.datetime) -> None:
    from jeval_ray.scoring.jury import described_juries, describe_jury, judging_summary
    from jeval_ray.store.reader import read_judgment_rows
    from jeval_ray.store.writer import write_json_atomic
    from jeval_ray.sweep.driver import MANIFEST, _read_manifest

    manifest = _read_manifest(fs, run_path) or {}
    block = manifest.get("judging") or {}
    described = described_juries(block)
    if stats["jury"] not in described:
        described[stats["jury"]] = describe_jury(cfg.judging(), "rescore", cfg.judge_budget_usd)
    block["juries"] = judging_summary(read_judgment_rows(run_path, fs), described)
    block.setdefault("rescores", []).append({
        "jury": stats["jury"], "rubric": cfg.judge, "started_at": started.isoformat(),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        **{k: stats[k] for k in ("episodes", "added", "skipped", "left_budget", "ok", "unscored", "failed", "cost_usd")}})
    manifest["judging"] = block
    write_json_atomic(fs, f"{run_path}/{MANIFEST}", manifest)


def rescore(run: str, config: str | RescoreConfig, *, filesystem=None) -> dict:
    """Re-judge the run at ``run`` (path or URI) with the jury of ``config``; returns the counts."""
    from jeval_ray._fs import has_credentials, resolve_fs
    from jeval_ray.sweep.driver import MANIFEST_KIND, _read_manifest

    if has_credentials(run):
        raise ConfigError("run: the URI carries a secret in its user info. Fix: give credentials the filesystem's usual "
                          "way (e.g. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), not in the URI.")
    cfg = config if isinstance(config, RescoreConfig) else load_rescore_config(config)
    try:
        fs, run_path = resolve_fs(run, filesystem)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"run: cannot open {run!r} ({exc}). Fix: pass a run directory or URI.") from None
    manifest = _read_manifest(fs, run_path)
    if manifest is None or manifest.get("kind") != MANIFEST_KIND:
        raise ConfigError(f"run: {run!r} is not a jeval_ray sweep run (no manifest.json). Fix: pass <output root>/<run id>.")
    started = dt.datetime.now(dt.timezone.utc)
    stats = asyncio.run(_rescore(run_path, fs, cfg))
    _update_manifest(fs, run_path, cfg, stats, started)
    return stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jeval_ray.rescore", description=__doc__.split("\n\n")[0],
                                epilog="Judges config: a scoring block (docs/scoring.md, 'Re-scoring'). "
                                       "Exit codes: 0 done, 2 bad input, 1 could not go on.")
    p.add_argument("run", help="the run: <output root>/<run id>, a local path or a pyarrow filesystem URI")
    p.add_argument("--config", required=True, metavar="PATH", help="judges config (YAML or JSON)")
    args = p.parse_args(argv)
    try:
        stats = rescore(args.run, args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"rescore: jury {stats['jury']}: {stats['added']} judgments added (ok {stats['ok']}, unscored "
          f"{stats['unscored']}, failed {stats['failed']}), {stats['skipped']} already present, "
          f"{stats['left_budget']} left for the budget; judge cost {stats['cost_usd']:.4f} USD over "
          f"{stats['episodes']} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
