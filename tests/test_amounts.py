"""Every criteria code is classified: a misstatement (with the amount that measures it) or a control
deviation (an exception without an amount)."""

import pytest
from pydantic import ValidationError

from jeval_ray.builder.spec import spec
from jeval_ray.tasks import all_tasks, get_task


def test_every_criterion_of_every_task_is_classified():
    for t in all_tasks():
        for c in t.criteria:
            assert c.amount is None or c.amount.strip(), (t.id, c.code)
        if t.asks_amount:
            assert any(c.is_misstatement for c in t.criteria), t.id
    kinds = {c.code: c.is_misstatement for c in get_task("JE-16").criteria}
    assert kinds == {"UNBALANCED": True, "SELF_APPROVAL": False, "INVALID_ACCOUNT": False, "UNAUTHORISED_USER": False,
                     "OFF_HOURS": False, "DUPLICATE": True, "CUTOFF": False, "COMPLETENESS_GAP": True}
    assert all(c.is_misstatement for c in get_task("JE-9").criteria)
    with pytest.raises(ValidationError, match="none of its criteria is a misstatement"):
        spec("JE-X", "L1", "t", objective="o", defect="d", decoys="d", required_evidence="r", sources=(),
             tools=("flag_entry",), criteria=(("SELF_APPROVAL", "a deviation"),), asks_amount=True)
