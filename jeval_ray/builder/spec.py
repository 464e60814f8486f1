"""The task catalogue's data model: one ``TaskSpec`` per task, and the difficulty ``Knobs``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Tier = Literal["L1", "L2", "L3", "L4"]

#: Every tool the environment knows; a task exposes a subset (docs/tasks.md).
ALL_TOOLS: tuple[str, ...] = (
    "list_documents",
    "open_document",
    "search_documents",
    "query_ledger",
    "get_entry",
    "get_master_data",
    "compute_stats",
    "get_balances",
    "flag_entry",
    "clear_entry",
    "submit",
)

#: Tools without which an episode cannot be played or ended; they can never be withheld.
ESSENTIAL_TOOLS: frozenset[str] = frozenset({"flag_entry", "clear_entry", "submit"})

DEFAULT_SIZE = {"L1": 200, "L2": 300, "L3": 400, "L4": 600}
DEFAULT_BUDGET = {"L1": 40, "L2": 60, "L3": 80, "L4": 120}
DEFAULT_WEIGHTS = {
    "L1": (0.70, 0.20, 0.10),
    "L2": (0.60, 0.25, 0.15),
    "L3": (0.50, 0.25, 0.25),
    "L4": (0.40, 0.30, 0.30),
}


class Weights(BaseModel):
    """Scoring weights; they must sum to 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    outcome: float = Field(ge=0, le=1)
    process: float = Field(ge=0, le=1)
    rationale: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _sum_to_one(self) -> "Weights":
        total = self.outcome + self.process + self.rationale
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"outcome + process + rationale must sum to 1, got {total:.4f}")
        return self


class Criterion(BaseModel):
    """A criteria code an agent may cite when flagging, with the words that define it.

    ``amount`` classifies it: a **misstatement** (a monetary error) names the amount that measures it
    (what a flag states, e.g. "the difference between debits and credits"); ``None`` makes it a
    **control deviation**, an exception without an amount. Where its task asks for amounts
    (``TaskSpec.asks_amount``), a misstatement's amount is asked and scored; a deviation's never is
    (docs/scoring.md, "Amounts")."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    code: str
    description: str
    amount: str | None = None

    @property
    def is_misstatement(self) -> bool:
        return self.amount is not None


class Knobs(BaseModel):
    """Difficulty knobs of one world (the run config's ``generator`` block, docs/environment_spec.md).

    ``None`` means "the task's default": slice size by tier, 3-8 defects drawn from the seed,
    as many decoys as defects.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    n_entries: int | None = Field(default=None, ge=20, le=5_000_000, description="size of the simulated year in journal entries (approximate; a year's fixed runs make at least about 530)")
    n_defects: int | None = Field(default=None, ge=0, le=200, description="planted defects; default 3-8 from the seed")
    n_decoys: int | None = Field(default=None, ge=0, le=200, description="legitimate look-alikes; default = n_defects")
    noise_documents: int = Field(default=8, ge=0, le=500, description="unrelated documents in the support pack")
    near_miss: float = Field(
        default=0.5, ge=0.0, le=1.0, description="how close decoys sit to the red-flag threshold (1 = closest)"
    )
    description_quality: float = Field(
        default=1.0, ge=0.0, le=1.0, description="share of entries with a clear description (the rest are terse)"
    )
    prompt_injection: bool = Field(
        default=False, description="add documents whose text tries to instruct the agent"
    )

    @classmethod
    def names(cls) -> list[str]:
        return list(cls.model_fields)


class TaskSpec(BaseModel):
    """One task of the catalogue (docs/tasks.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    tier: Tier
    title: str
    objective: str
    defect: str
    decoys: str
    required_evidence: str
    sources: tuple[str, ...]
    tools: tuple[str, ...]
    criteria: tuple[Criterion, ...]
    step_budget: int = Field(ge=1)
    weights: Weights
    default_knobs: Knobs = Knobs()
    #: tools removed in the sweep's default withheld-tool condition
    withheld_variant: tuple[str, ...] = ()
    #: the procedure quantifies: flags of its misstatement criteria state an amount, which is scored
    asks_amount: bool = False
    #: process-score penalty per premature disposition (JE-16 scores premature dispositions)
    premature_penalty: float = Field(default=0.0, ge=0.0, le=1.0)
    available: bool = False

    @model_validator(mode="after")
    def _amounts_need_misstatements(self) -> "TaskSpec":
        if self.asks_amount and not any(c.is_misstatement for c in self.criteria):
            raise ValueError(f"{self.id} asks for amounts but none of its criteria is a misstatement")
        return self

    @property
    def amount_criteria(self) -> tuple[Criterion, ...]:
        """The criteria whose flags state an amount that is scored: the misstatements of a task that
        asks for amounts (none otherwise)."""
        return tuple(c for c in self.criteria if c.is_misstatement) if self.asks_amount else ()

    def amount_asked(self, code: str | None) -> bool:
        """Whether a flag under criteria ``code`` is asked for (and scored on) an amount."""
        return any(c.code == code for c in self.amount_criteria)

    @property
    def amount_rule(self) -> str:
        """The rule of amounts in words (the brief and the flag tool state it); empty when none is asked."""
        asked = self.amount_criteria
        if not asked:
            return ""
        rule = ("When you flag a misstatement, state its amount in the `amount` argument: "
                + "; ".join(f"for {c.code}, {c.amount}" for c in asked) + ".")
        deviations = [c.code for c in self.criteria if not c.is_misstatement]
        if deviations:
            one = len(deviations) == 1
            rule += (f" {', '.join(deviations)} {'is a control deviation' if one else 'are control deviations'}: report "
                     f"{'it' if one else 'each'} as an exception without an amount (none is asked or scored).")
        return rule

    @property
    def judges_per_episode(self) -> int:
        """3 judges if tier == L4 else 1 (the run-config contract, docs/environment_spec.md)."""
        return 3 if self.tier == "L4" else 1

    @property
    def criteria_codes(self) -> tuple[str, ...]:
        return tuple(c.code for c in self.criteria)

    def resolve_knobs(self, overrides: dict | Knobs | None = None) -> Knobs:
        """The task's default knobs with ``overrides`` applied and validated."""
        base = self.default_knobs.model_dump()
        if isinstance(overrides, Knobs):
            overrides = overrides.model_dump(exclude_unset=True)
        base.update(overrides or {})
        if base["n_entries"] is None:
            base["n_entries"] = DEFAULT_SIZE[self.tier]
        return Knobs.model_validate(base)

    def summary(self) -> dict:
        d = self.model_dump(mode="json")
        d["judges_per_episode"] = self.judges_per_episode
        return d


class KeyRationale(BaseModel):
    """Why one kind of planted entry is keyed as it is: what an auditor reads and concludes.

    ``kind`` is ``defect`` or ``decoy``; ``type`` is the defect or decoy type as it appears in the
    world's key; ``evidence`` names the decisive evidence; ``facts`` the facts in it that decide;
    ``conclusion`` the sentence an auditor would write in the working papers; ``standard`` the
    paragraph of the auditing standards the procedure comes from (AS 2401, ISA 240)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["defect", "decoy"]
    type: str
    evidence: str
    facts: str
    conclusion: str
    standard: str = ""


def key(kind: str, type: str, *, evidence: str, facts: str, conclusion: str, standard: str = "") -> KeyRationale:
    """One entry of a task module's ``KEY_RATIONALE``."""
    return KeyRationale(kind=kind, type=type, evidence=evidence, facts=facts, conclusion=conclusion, standard=standard)


def spec(
    id: str,
    tier: Tier,
    title: str,
    *,
    objective: str,
    defect: str,
    decoys: str,
    required_evidence: str,
    sources: tuple[str, ...],
    tools: tuple[str, ...],
    criteria: tuple[tuple[str, str] | tuple[str, str, str], ...],
    **extra,
) -> TaskSpec:
    """Build a TaskSpec with the tier's default budget and weights. A criterion is ``(code, description)``
    for a control deviation, ``(code, description, amount)`` for a misstatement (``Criterion.amount``)."""
    o, p, r = DEFAULT_WEIGHTS[tier]
    return TaskSpec(
        id=id,
        tier=tier,
        title=title,
        objective=objective,
        defect=defect,
        decoys=decoys,
        required_evidence=required_evidence,
        sources=sources,
        tools=tools,
        criteria=tuple(Criterion(code=c[0], description=c[1], amount=c[2] if len(c) > 2 else None) for c in criteria),
        step_budget=extra.pop("step_budget", DEFAULT_BUDGET[tier]),
        weights=extra.pop("weights", Weights(outcome=o, process=p, rationale=r)),
        **extra,
    )
