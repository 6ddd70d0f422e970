"""The result of one `chatguard doctor` check: a leaf module the check modules share.

Four outcomes, as cdk-nag's rules have three: the account does what the stack assumes
(PASS), it does not (FAIL: the only one that makes the command exit 1), the check could not
find out (CANNOT TEST, with why), or the assumption does not apply to this stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Outcome = Literal["PASS", "FAIL", "CANNOT TEST", "NOT APPLICABLE"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    outcome: Outcome
    detail: str
    fix: str = ""  # one line: what the operator changes (FAIL, CANNOT TEST)


def passed(name: str, detail: str) -> Check:
    return Check(name, "PASS", detail)


def failed(name: str, detail: str, fix: str) -> Check:
    return Check(name, "FAIL", detail, fix)


def cannot_test(name: str, why: str, fix: str) -> Check:
    return Check(name, "CANNOT TEST", why, fix)


def not_applicable(name: str, why: str) -> Check:
    return Check(name, "NOT APPLICABLE", why)


def aws_said(exc: BaseException) -> str:
    """The AWS error code and message behind ``exc`` (its cause chain), else its text.

    The step adapters keep the ClientError as the cause (``raise ... from exc``) while their
    own message names only the code: the operator needs AWS's sentence.
    """
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict) and "Error" in response:
            error = response["Error"]
            return f"{error.get('Code', 'Error')}: {error.get('Message', '')}".strip()
        seen = seen.__cause__
    return str(exc)
