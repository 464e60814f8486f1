"""The task kit: the vocabulary task modules share (docs/adding_a_task.md walks through it).

* ``forms``: one ``Form`` per document kind, rendering a document from typed fields and parsing
  the same fields back from the text the agent sees (the regular expressions live here,
  generated from the template).
* ``draws``: one pool, roles assigned after (``roles``, ``grouped_roles``, ``split_in_groups``).
* ``rules``: the audit rules a policy states, one version each (``ACCOUNT_OPEN``,
  ``USER_MAY_POST``, ``ROUNDING_LIMIT``, ``POSTING_WINDOW``, ``CLOSED_PERIOD``, ``APPROVAL_LIMIT``,
  ``APPROVED_WHEN_RECORDED``), read by the plant, the careful solver and the docs.
* ``solver``: the budgeted loop (``dispose``, ``review``, ``Disposition``) and the generic naive
  of a stated surface rule (``SurfaceRule``, ``surface_naive``).
* ``task``: the typed ``Task`` value a task module ends with.

Plants claim what they change with ``WorldBuilder.claim`` (``jeval_ray.builder``); typed entry
columns are ``WorldBuilder.cols`` (``cols.post_date`` instead of ``e["post_date"]``).
The kit sits inside the ``tasks`` layer: it imports the builder and the protocol, never a task.
"""

from jeval_ray.tasks.taskkit.draws import grouped_roles, roles, split_in_groups
from jeval_ray.tasks.taskkit.forms import SIGNED_MONEY
from jeval_ray.tasks.taskkit.forms import (COUNT, DATE, DOC_NUMBER, EMPTY, HHMM, INT, LEADER, LINE, MONEY, NAME, REF,
                                          TIMESTAMP, TOKEN, WHOLE_MONEY, WORD, Form, Kind, Lines, LinesForm, Many,
                                          doc_ref, entry_ref, fixed, hhmm, mentions, parse_any)
from jeval_ray.tasks.taskkit.rules import (ACCOUNT_OPEN, APPROVAL_LIMIT, APPROVED_WHEN_RECORDED, CLOSED_PERIOD,
                                          POSTING_WINDOW, ROUNDING_LIMIT, USER_MAY_POST, AccountOpen, ApprovalLimit,
                                          ApprovedWhenRecorded, ClosedPeriod, PostingWindow, RoundingLimit,
                                          UserMayPost, Verdict)
from jeval_ray.tasks.taskkit.solver import (Disposition, SurfaceRule, call_while, clear, dispose, flag, gather_while,
                                           read_while,
                                           review, review_groups, surface_naive, tally)
from jeval_ray.tasks.taskkit.task import Task

__all__ = [
    "ACCOUNT_OPEN", "APPROVAL_LIMIT", "APPROVED_WHEN_RECORDED", "CLOSED_PERIOD", "COUNT", "DATE", "DOC_NUMBER",
    "EMPTY", "HHMM", "INT", "LEADER", "LINE", "MONEY", "NAME", "POSTING_WINDOW", "REF", "ROUNDING_LIMIT",
    "SIGNED_MONEY", "TIMESTAMP", "TOKEN", "USER_MAY_POST", "WHOLE_MONEY", "WORD", "AccountOpen", "ApprovalLimit",
    "ApprovedWhenRecorded", "ClosedPeriod", "Disposition", "Form", "Kind", "Lines", "LinesForm", "Many",
    "PostingWindow", "RoundingLimit", "SurfaceRule", "Task", "UserMayPost", "Verdict", "call_while", "clear", "gather_while",
    "dispose", "doc_ref", "entry_ref", "fixed", "flag", "grouped_roles", "hhmm", "mentions", "parse_any",
    "read_while", "review", "review_groups", "roles", "split_in_groups", "surface_naive", "tally",
]
