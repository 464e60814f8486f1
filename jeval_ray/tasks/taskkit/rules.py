"""Rules: the audit rules a policy states, one version each, as values.

A rule is read by everything that needs it: the task's policy or master data say it
(``statement``), the plant draws defects that break it and decoys that keep it (and checks its
draw with ``check``), and the careful solver decides with the same ``check``. ``docs/tasks.md``
quotes ``statement``. A rule's ``check`` returns a ``Verdict``: whether the rule holds and the
sentence that says why (the rationale's core).

The key audits (``tests/test_key_audit_je*.py``) deliberately keep their own statement of each
rule: a wrong rule shared by the planter, the solver and the audit would be invisible to all three.

Rows are master-data rows as the agent reads them (``get_master_data``: dicts of the table's
columns); dates are ISO text, compared as text.
"""

from __future__ import annotations

import math

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    """A rule's answer for one case: ``ok`` (the rule holds) and ``why`` (the sentence saying so)."""

    ok: bool
    why: str


@dataclass(frozen=True)
class AccountOpen:
    """An account may be posted to on a date within its validity in the chart of accounts: its
    status is active or closed, it opened on or before the date, and if closed, on or after it.
    ``blocked_on`` is not part of this version (no task plants it)."""

    statement: str = ("the posting date must fall within the account's validity in the chart of accounts "
                      "(opened on or before it; if closed, closed on or after it)")
    #: the date every account of the standing chart opened (an account opened later is a change)
    standing_since: str = "2025-01-01"

    def check(self, acct: Row | None, posted: str) -> Verdict:
        """Whether ``acct`` (a ``master:accounts`` row, ``None`` when missing) was open for postings
        dated ``posted``."""
        if acct is None:
            return Verdict(False, "the account does not exist in the chart of accounts")
        if acct.get("status") not in ("active", "closed"):
            return Verdict(False, f"the account's status is {acct.get('status')}")
        if acct.get("opened") and posted < acct["opened"]:
            return Verdict(False, f"the account was opened only on {acct['opened']}, after the posting date {posted}")
        if acct.get("closed") and posted > acct["closed"]:
            return Verdict(False, f"the account was closed on {acct['closed']}, before the posting date {posted}")
        if acct.get("closed"):
            return Verdict(True, f"the account was closed only on {acct['closed']}, after the posting date {posted}")
        return Verdict(True, f"the account was opened on {acct['opened']}, on or before the posting date {posted}")

    def standing(self, acct: Row | None) -> bool:
        """A plain active account unchanged during the year (what a surface rule trusts)."""
        return bool(acct) and acct is not None and acct.get("status") == "active" \
            and (acct.get("opened") or "") < self.standing_since and not acct.get("closed")


@dataclass(frozen=True)
class UserMayPost:
    """A user may post an entry only while holding posting rights: an entry keyed and posted on or
    before the date the user's rights ended (termination, or withdrawal on transfer) is authorised;
    one keyed or posted after it is not. The user master is authoritative."""

    statement: str = ("an entry may be keyed and posted only by a user holding posting rights on both dates "
                      "(the user master: termination_date, rights_withdrawn_on)")

    def suspect(self, user: Row) -> bool:
        """A user the surface rule looks at: no posting rights, or terminated."""
        return not user.get("posting_rights") or user.get("status") == "terminated"

    def ended(self, user: Row) -> tuple[str, str]:
        """(the date the user's posting rights ended, '' while they last; the words for how they ended)."""
        if user.get("status") == "terminated":
            return user.get("termination_date") or "", "was terminated on"
        return user.get("rights_withdrawn_on") or "", "had posting rights withdrawn on"

    def check(self, user: Row, keyed: str, posted: str) -> Verdict:
        """Whether ``user`` could post an entry keyed on ``keyed`` and posted on ``posted`` (ISO dates)."""
        end, what = self.ended(user)
        uid = user["user_id"]
        if not self.suspect(user):
            return Verdict(True, f"{uid} holds posting rights in master:users")
        if not end:
            return Verdict(False, f"{uid} ({user.get('role')}) holds no posting rights in master:users and no date "
                                  "shows the user ever held them")
        if max(posted, keyed) > end:
            return Verdict(False, f"{uid} {what} {end}, before the entry was keyed on {keyed} and posted on {posted}")
        return Verdict(True, f"{uid} {what} {end} only, after the entry was keyed on {keyed} and posted on {posted}; "
                             "the user held posting rights at the time")


@dataclass(frozen=True)
class RoundingLimit:
    """An upload's residual (debits - credits of the file, posted by the tool to the rounding account)
    is acceptable only as allocation rounding, and only within three standard deviations of the sum
    of ``lines`` independent half-cent roundings: each rounding error is uniform on half a cent
    either side (standard deviation 0.5 / sqrt(3) cents), so the tolerance is ``per_root_line`` =
    87 ten-thousandths of a currency unit (0.0087) times the square root of the number of rounded
    lines. A keyed file (nothing rounded) has no acceptable residual, and no residual is accepted
    beyond the upload tool's tolerance."""

    per_root_line: int = 87
    statement: str = ("the only accepted residual is allocation rounding within three standard deviations of the "
                      "file's half-cent roundings: USD 0.0087 x sqrt(n) for n rounded lines, within the upload "
                      "tool's tolerance")

    def limit_cents(self, lines: int) -> float:
        """The tolerance of a file of ``lines`` rounded lines, in cents (0.87 x sqrt(lines))."""
        return self.per_root_line / 100 * math.sqrt(max(lines, 0))

    def check(self, basis: str, lines: int, diff_cents: int, tol_cents: int | None) -> Verdict:
        """Whether a residual of ``diff_cents`` (absolute) on a file of ``basis`` over ``lines`` lines
        is acceptable (``tol_cents``: the tool's tolerance, ``None`` when unknown)."""
        if basis != "allocation":
            return Verdict(False, "keyed")
        if diff_cents > self.limit_cents(lines) + 1e-7 or (tol_cents and diff_cents > tol_cents):
            return Verdict(False, "over the limit")
        return Verdict(True, "rounding")


@dataclass(frozen=True)
class PostingWindow:
    """Manual entries may be keyed only on business days (not on a weekend or a public holiday of
    the company calendar) within the policy's business hours [start, end); the entry timestamp (when
    it was keyed) counts, not the posting date. Close work a memo authorises is the policy's
    exception, which the task judges from the memo."""

    statement: str = ("a manual entry may be keyed only on a business day, not on a weekend or a public holiday, "
                      "within the business hours the posting window policy states; the entry timestamp counts")

    def outside(self, day: Any, time_s: Any, holidays: Any, start: int, end: int) -> np.ndarray:
        """Per entry (vectorised over ``day``, datetime64[D], and ``time_s``, seconds after midnight):
        whether it was keyed outside the window (a weekend, a holiday, or a time outside [start, end))."""
        day = np.asarray(day, dtype="datetime64[D]")
        weekend = ~np.is_busday(day)
        holiday = np.isin(day, np.asarray(holidays, dtype="datetime64[D]"))
        return weekend | holiday | (np.asarray(time_s) < start) | (np.asarray(time_s) >= end)


@dataclass(frozen=True)
class ClosedPeriod:
    """A period is locked after its close date (``master:calendar``, kind ``period_close``): an entry
    recorded (its entry timestamp) after the close date of the period it is posted to was posted
    into a closed period. That is allowed only under a post-closing adjustment request approved by
    the Controller and the CFO before the entry was recorded, for the amount posted; a rejected
    request, one approved on or after the day the entry was recorded, or one approved for another
    amount does not authorise it. The system's closing entry (YC) is not such an entry."""

    statement: str = ("an entry recorded after the close date of the period it is posted to (master:calendar) was "
                      "posted into a closed period: allowed only under a post-closing adjustment request approved "
                      "by the Controller and the CFO before it was recorded, for the amount posted")

    def after_close(self, recorded: str, posted: str, closes: Mapping[str, str]) -> str:
        """The close date of the period ``posted`` (ISO) falls in when the entry, recorded on
        ``recorded``, came after it; '' when it did not (or the period has no close date).
        ``closes``: {``YYYY-MM``: close date}."""
        close = closes.get(posted[:7], "")
        return close if close and recorded[:10] > close else ""

    def check(self, recorded: str, amount: float, request: str = "", approved: bool = False, decided: str = "",
              approved_amount: float | None = None) -> Verdict:
        """Whether a request (its id, ``''`` when none; ``approved`` or rejected on ``decided``, for
        ``approved_amount``) authorises an entry of ``amount`` recorded on ``recorded`` after the close."""
        if not request:
            return Verdict(False, "No post-closing adjustment request authorises it.")
        if not approved:
            return Verdict(False, f"Post-closing request {request} for it was rejected on {decided}.")
        if decided >= recorded:
            return Verdict(False, f"Post-closing request {request} was approved only on {decided}, after the entry "
                                  "was recorded.")
        if approved_amount is None or abs(approved_amount - amount) >= 0.005:
            return Verdict(False, f"Post-closing request {request} approved {approved_amount or 0:.2f} only, not the "
                                  f"{amount:.2f} posted.")
        return Verdict(True, f"Post-closing request {request} was approved on {decided}, before the entry was "
                             f"recorded on {recorded}, for the amount posted, {amount:,.2f}.")


@dataclass(frozen=True)
class ApprovalLimit:
    """A purchase order or a manual entry is approved by a user other than its preparer whose own
    approval limit (the user master) covers its full amount. A purchase is approved at its full
    amount: the parts of one purchase split into several orders or invoices are assessed together
    against the limit of whoever approved them. Limits and amounts in the same unit (USD or cents)."""

    statement: str = ("a purchase order or a manual entry is approved by a user other than its preparer whose approval "
                      "limit in the user master covers its full amount; the parts of one purchase split into several "
                      "are assessed together")

    def covers(self, limit: float, amount: float) -> bool:
        """Whether an approval limit of ``limit`` covers ``amount``."""
        return limit >= amount

    def check(self, approver: Row | None, preparer: str, amount: float) -> Verdict:
        """Whether ``approver`` (a ``master:users`` row, ``None`` when missing) could approve
        ``amount`` (USD) prepared by ``preparer``."""
        if approver is None:
            return Verdict(False, "the approver is not in the user master")
        uid, limit = approver["user_id"], float(approver.get("approval_limit") or 0.0)
        if uid == preparer:
            return Verdict(False, f"{uid} approved his or her own entry")
        if not self.covers(limit, amount):
            return Verdict(False, f"{uid}'s approval limit of {limit:,.2f} is below the {amount:,.2f}")
        return Verdict(True, f"{uid}'s approval limit of {limit:,.2f} covers the {amount:,.2f}")


@dataclass(frozen=True)
class ApprovedWhenRecorded:
    """The document that approves an entry's amount (a board resolution, an agreement, a signed
    request) supports it only if it fixes the amount recorded and is dated no later than the day the
    entry was recorded (its entry timestamp): an approval given afterwards, or of another figure,
    does not. Amounts in cents; dates ISO text."""

    statement: str = ("the document approving an entry supports it only if it fixes the amount recorded and is "
                      "dated no later than the day the entry was recorded (its entry timestamp); an approval given "
                      "afterwards does not support it")

    def check(self, fixed_cents: int | None, amount_cents: int, dated: str, recorded: str) -> Verdict:
        """Whether a document fixing ``fixed_cents`` (``None``: none found), dated ``dated``, supports an
        entry of ``amount_cents`` recorded on ``recorded``."""
        if fixed_cents is None:
            return Verdict(False, "no document approves the amount")
        if fixed_cents != amount_cents:
            return Verdict(False, f"the document fixes {fixed_cents / 100:,.2f}, not the {amount_cents / 100:,.2f} "
                                  "recorded")
        if dated > recorded:
            return Verdict(False, f"the document is dated {dated}, after the entry was recorded on {recorded}")
        return Verdict(True, f"the document fixes the {amount_cents / 100:,.2f} and is dated {dated}, no later than "
                             f"the entry was recorded on {recorded}")



ACCOUNT_OPEN = AccountOpen()
APPROVAL_LIMIT = ApprovalLimit()
APPROVED_WHEN_RECORDED = ApprovedWhenRecorded()
CLOSED_PERIOD = ClosedPeriod()
POSTING_WINDOW = PostingWindow()
USER_MAY_POST = UserMayPost()
ROUNDING_LIMIT = RoundingLimit()

__all__ = ["ACCOUNT_OPEN", "APPROVAL_LIMIT", "APPROVED_WHEN_RECORDED", "CLOSED_PERIOD", "POSTING_WINDOW",
           "ROUNDING_LIMIT", "USER_MAY_POST", "AccountOpen", "ApprovalLimit", "ApprovedWhenRecorded", "ClosedPeriod",
           "PostingWindow", "RoundingLimit", "UserMayPost", "Verdict"]
