"""The agents' budgets of a run: ``models[].budget_usd`` and ``budget_usd``, admitted in the limiter actors.

Before the driver starts an episode of a budgeted endpoint model it asks for admission where that
model's calls pass, the endpoint's cluster-wide ``RateLimiter`` actor (``models.ratelimit``), which
keeps the run's ledger of the model (``SpendLedger``); the sweep's own budget is a ledger in a
``RateLimiter`` actor named for the run, since it spans endpoints. An episode is admitted only
while, on each of its budgets, spent + the forecast of the admitted episodes still in flight + its
own forecast (``sweep.forecast``) stays within the cap; it holds its forecast until it ends and
then spends what it really cost. Once a budget refuses, it stays shut for this invocation: no new
episode under it starts, and each of its remaining cells is written as a ``skipped`` row
(termination ``budget: ...``). The ledgers open at what the run already spent (every attempt's
``cost_usd`` in its episodes rows), so a budget covers the run across resumes; a resume with a
higher budget plays the skipped cells.

Episodes already admitted run to their end: the spend can pass a budget by what they cost beyond
their forecast. ``episode_budget_usd`` (the LLM agent's own cap per episode) bounds that.
"""

from __future__ import annotations

from typing import Any

from jeval_ray.models.ratelimit import SpendLedger


def prior_spend(run_path: str, fs) -> dict[str, float]:
    """USD each model's agent episodes already cost in the run (every attempt: money spent is spent)."""
    from jeval_ray.store.reader import read_raw

    t = read_raw(run_path, "episodes", columns=["model", "cost_usd"], filesystem=fs)
    out: dict[str, float] = {}
    for m, c in zip(t["model"].to_pylist(), t["cost_usd"].to_pylist()):
        out[m] = out.get(m, 0.0) + float(c or 0.0)
    return out


#: how long an admission waits for a limiter actor that is restarting before its budget shuts
ACTOR_WAIT_S = 60.0


def _call(remote: Any, wait_s: float = ACTOR_WAIT_S) -> Any:
    """``ray.get`` of ``remote()``, sent again while its actor restarts (unavailable), for up to ``wait_s``."""
    import time

    import ray

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return ray.get(remote(), timeout=wait_s)
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.GetTimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Budgets:
    """Admission and settlement of a run's agent episodes against its budgets (see the module doc)."""

    def __init__(self, cfg, run_id: str, forecaster, spent: dict[str, float]) -> None:
        self.run_id = run_id
        self.forecaster = forecaster
        self.model_caps: dict[str, tuple[str, float]] = {}  # model -> (field, cap)
        self.endpoint: dict[str, Any] = {}  # model -> its ModelConfig
        for i, m in enumerate(cfg.models):
            if m.provider == "builtin":
                continue
            from jeval_ray.models.config import ModelConfig

            mc = ModelConfig.model_validate(m.endpoint_fields())
            self.endpoint[m.name] = mc
            if mc.budget_usd is not None:
                self.model_caps[m.name] = (f"models[{i}].budget_usd", mc.budget_usd)
        self.sweep_cap = cfg.budget_usd
        self.spent = spent
        self.closed: dict[str, str] = {}  # model (or "*": the sweep's budget) -> why its budget shut
        self._actors: dict[str, Any] = {}
        # episode id -> (model, its forecast USD, [(actor, ledger)] it is held on)
        self._admitted: dict[str, tuple[str, float, list[tuple[Any, str]]]] = {}

    @property
    def active(self) -> bool:
        return bool(self.model_caps) or self.sweep_cap is not None

    def governs(self, model: str) -> bool:
        return model in self.model_caps or (self.sweep_cap is not None and model in self.endpoint)

    def _ledger(self, field: str) -> str:
        return f"{self.run_id}|{field}"

    def _actor(self, model: str | None):
        from jeval_ray.models.ratelimit import get_rate_limiter

        key = model or "*"
        if key not in self._actors:
            if model is None:  # the sweep's ledger spans endpoints: a limiter actor of the run's own
                self._actors[key] = get_rate_limiter(f"budget-{self.run_id}", None, None, None)
            else:
                mc = self.endpoint[model]
                self._actors[key] = get_rate_limiter(mc.endpoint_key, mc.rpm, mc.tpm, mc.max_concurrency)
        return self._actors[key]

    def _budgets_of(self, model: str) -> list[tuple[Any, str, str, float]]:
        """(actor, ledger, field, cap) of every budget over ``model``'s episodes."""
        out = []
        if model in self.model_caps:
            field, cap = self.model_caps[model]
            out.append((self._actor(model), self._ledger(field), field, cap))
        if self.sweep_cap is not None and model in self.endpoint:
            out.append((self._actor(None), self._ledger("budget_usd"), "budget_usd", self.sweep_cap))
        return out

    def open(self) -> None:
        """Open every ledger at what the run already spent (needs Ray)."""
        import ray

        calls = [self._actor(m).budget_open.remote(self._ledger(field), self.spent.get(m, 0.0))
                 for m, (field, _) in self.model_caps.items()]
        if self.sweep_cap is not None:
            total = sum(v for m, v in self.spent.items() if m in self.endpoint)
            calls.append(self._actor(None).budget_open.remote(self._ledger("budget_usd"), total))
        ray.get(calls)

    def admit(self, episode_id: str, model: str, task_id: str, condition: str) -> str | None:
        """None when the episode may start (its forecast now held), else the ``budget: ...`` termination
        of its skipped row."""
        import ray

        if not self.governs(model):
            return None
        shut = self.closed.get(model) or self.closed.get("*")
        if shut:
            return shut
        usd = self.forecaster.usd(model, task_id, condition)
        held: list[tuple[Any, str]] = []
        for actor, ledger, field, cap in self._budgets_of(model):
            try:
                why = _call(lambda: actor.budget_admit.remote(episode_id, usd, {ledger: cap}))
                if why == SpendLedger.NOT_OPEN:  # its actor restarted: open it again from our accounts
                    _call(lambda: actor.budget_open.remote(ledger, self._spent_on(field, model), self._held_on(ledger)))
                    why = _call(lambda: actor.budget_admit.remote(episode_id, usd, {ledger: cap}))
            except ray.exceptions.RayError as exc:
                why = f"{ledger}: the limiter actor is unavailable ({type(exc).__name__}); nothing is admitted blind"
            if why is not None:
                for a, lg in held:  # give back what the other budget held
                    a.budget_settle.remote(episode_id, 0.0, [lg])
                reason = f"budget: {field}={cap:g} ({why.split('|', 1)[-1].split(': ', 1)[-1]})"
                self.closed["*" if field == "budget_usd" else model] = reason
                return reason
            held.append((actor, ledger))
        self._admitted[episode_id] = (model, usd, held)
        return None

    def _spent_on(self, field: str, model: str) -> float:
        if field == "budget_usd":
            return sum(v for m, v in self.spent.items() if m in self.endpoint)
        return self.spent.get(model, 0.0)

    def _held_on(self, ledger: str) -> dict[str, float]:
        return {eid: usd for eid, (_, usd, held) in self._admitted.items() if any(lg == ledger for _, lg in held)}

    def settle(self, episode_id: str, usd: float) -> None:
        """The admitted episode ended having cost ``usd`` (fire and forget: the actor orders calls)."""
        admitted = self._admitted.pop(episode_id, None)
        if admitted is None:
            return
        model, _, held = admitted
        self.spent[model] = self.spent.get(model, 0.0) + usd
        for actor, ledger in held:
            actor.budget_settle.remote(episode_id, float(usd), [ledger])

    def summary(self) -> dict:
        """For the manifest: each budget, what the run spent under it and whether it shut."""
        out = {}
        for m, (field, cap) in self.model_caps.items():
            out[field] = {"model": m, "cap_usd": cap, "spent_usd": round(self.spent.get(m, 0.0), 6),
                          "shut": self.closed.get(m)}
        if self.sweep_cap is not None:
            out["budget_usd"] = {"cap_usd": self.sweep_cap, "shut": self.closed.get("*"),
                                 "spent_usd": round(sum(v for m, v in self.spent.items() if m in self.endpoint), 6)}
        return out

    def close(self) -> None:
        """Drop the run's ledgers from the endpoints' actors and end the run's own actor."""
        import ray

        try:
            for m, (field, _) in self.model_caps.items():
                self._actor(m).budget_close.remote(self._ledger(field))
            if "*" in self._actors:
                ray.kill(self._actors["*"], no_restart=True)
        except Exception:  # noqa: BLE001 - Ray already down: the ledgers went with it
            pass


__all__ = ["Budgets", "prior_spend"]
