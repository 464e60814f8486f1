"""What a world is: the visible ledger, master data and support pack, and the held-out defect ledger."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa


@dataclass(frozen=True)
class Document:
    """One support-pack document, with a stable id (``DOC-0001`` …)."""

    doc_id: str
    doc_type: str
    title: str
    date: str
    body: str

    def listing(self) -> dict:
        return {"doc_id": self.doc_id, "doc_type": self.doc_type, "title": self.title, "date": self.date}


@dataclass(frozen=True)
class DefectRecord:
    """One row of the held-out defect ledger; never shown to the agent."""

    entry_id: str
    defect_type: str
    criteria: str
    required_evidence: tuple[str, ...]
    misstatement: float
    #: the decisive facts a correct rationale states (figures, dates, ids, names); see scoring.judge
    facts: tuple[str, ...] = ()
    #: other amounts that earn full amount credit besides ``misstatement`` (JE-9: a post-closing entry
    #: approved for part of it is misstated at the amount posted or at the unapproved excess)
    also_accepted: tuple[float, ...] = ()

    @property
    def accepted_amounts(self) -> tuple[float, ...]:
        """Every amount that earns full amount credit: the misstatement, then ``also_accepted``."""
        return (self.misstatement, *self.also_accepted)


@dataclass(frozen=True)
class DecoyRecord:
    """A planted legitimate look-alike and the evidence that clears it; scorer-side only."""

    entry_id: str
    decoy_type: str
    clearing_evidence: tuple[str, ...]
    #: the decisive facts a correct rationale states (figures, dates, ids, names); see scoring.judge
    facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class World:
    """Everything generated from ``(task_id, seed, knobs)``.

    ``ledger``, ``master``, ``documents`` and ``facts`` are what tools may show; ``defects``,
    ``decoys`` and ``hidden_entries`` belong to the scorer.
    """

    task_id: str
    seed: int
    knobs: dict
    ledger: pa.Table
    master: dict[str, pa.Table]
    documents: tuple[Document, ...]
    facts: dict
    defects: tuple[DefectRecord, ...]
    decoys: tuple[DecoyRecord, ...]
    hidden_entries: tuple[str, ...] = ()
    world_hash: str = ""
    _doc_index: dict = field(default_factory=dict, repr=False, compare=False)
    #: values derived from the world alone and memoised by the scorer (what bears on an entry …)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def document(self, doc_id: str) -> Document | None:
        if not self._doc_index:
            self._doc_index.update({d.doc_id: d for d in self.documents})
        return self._doc_index.get(doc_id)

    @property
    def entry_ids(self) -> list[str]:
        """Distinct entry ids of the visible slice, in ledger order."""
        return self.ledger.column("entry_id").unique().to_pylist()

    @property
    def defect_ids(self) -> set[str]:
        return {d.entry_id for d in self.defects}

    @property
    def n_entries(self) -> int:
        return len(self.ledger.column("entry_id").unique())
