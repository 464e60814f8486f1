"""Readers of a JE-11 world as the agent sees it, shared by the task's tests and its key audit (their
own reading of the policy text, independent of the task kit's forms)."""

from __future__ import annotations

import re


def parse_pairs(body: str) -> set[tuple[str, str]]:
    """(debit, credit) account pairs from the non-standard combinations policy's 'Debit … / Credit …' lines."""
    out = set()
    for dr, cr in re.findall(r"Debit ([^()]+?) \([^)]*\) / Credit ([^()]+?) \(", body):
        for a in re.findall(r"\d{4}", dr):
            for c in re.findall(r"\d{4}", cr):
                out.add((a, c))
    return out
