"""Both mapping templates rendered on a real Apache Velocity 1.7 (tests/velocity.py).

Python's airspeed differs from Java Velocity on backslashes, so it is no stand-in; the
Python replay in test_vtl_escaping.py stays as the fast unit test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra import vtl
from tests.velocity import ARN, engine, succeeded

pytestmark = pytest.mark.infra

HOSTILE = [
    "plain",
    'x","viewerAddress":"203.0.113.9',
    'it\'s \\"quoted\\" / \u00e9 \U0001f600',
    "line\nbreak\ttab\r\u0001",
    "back\\'slash \\\\' and '\\",
    "$util.escapeJavaScript($x) ${context.requestId} #set($a = 1)#end",
    "</script><b>\u2028\u2029",
    "",
]


@pytest.fixture(scope="session")
def velocity(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return engine(tmp_path_factory.mktemp("velocity"))


# -- request template: headers and bodies arrive verbatim as the execution input ---------

BODIES = [
    {"message": "what's new?", "page": "/posts/waf"},
    *({"message": h, "history": [{"role": "user", "content": h}]} for h in HOSTILE[1:4]),
]


def _request_cases() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    template = vtl.request_template(ARN)
    cases = []
    for n, header in enumerate(HOSTILE):
        for body in (BODIES[0], BODIES[1 + n % 3]):
            # API Gateway keeps the client's header-name case: the template matches any.
            names = ("x-origin-verify", "CLOUDFRONT-VIEWER-ADDRESS") if n % 2 else (
                vtl.ORIGIN_HEADER, vtl.VIEWER_ADDRESS)  # fmt: skip
            case = {
                "template": template,
                "body": json.dumps(body, ensure_ascii=False),
                "headers": {names[0]: header, names[1]: header[::-1], "Accept": '"*/*'},
                "requestId": f"req-{n}",
            }
            expected = {
                "requestId": f"req-{n}",
                "body": body,
                "originVerify": header,
                "viewerAddress": header[::-1],
            }
            cases.append((case, expected))
    return cases


def test_hostile_headers_and_bodies_arrive_verbatim_as_the_execution_input(velocity) -> None:
    cases = _request_cases()
    results = velocity([case for case, _ in cases])
    for (case, expected), result in zip(cases, results, strict=True):
        outer = json.loads(result["output"])
        assert outer["stateMachineArn"] == ARN
        assert json.loads(outer["input"]) == expected, case["headers"]
        assert result["status"] is None


def test_missing_headers_are_empty_strings_not_template_text(velocity) -> None:
    case = {"template": vtl.request_template(ARN), "body": '{"message":"hi"}', "headers": {},
            "requestId": "r"}  # fmt: skip
    (result,) = velocity([case])
    execution_input = json.loads(json.loads(result["output"])["input"])
    assert execution_input["originVerify"] == execution_input["viewerAddress"] == ""


# -- response template: every execution outcome is valid JSON with the right status -----

SOURCES = [
    {"page": "/posts/waf", "heading": "WAF > Rate", "anchor": "rate"},
    {"page": "/a'b", "heading": '"q"', "anchor": 'x"y'},  # an anchor is escaped as any text
]


def _response_cases() -> list[tuple[str, int, dict[str, Any]]]:
    cases: list[tuple[str, int, dict[str, Any]]] = []
    for text in HOSTILE:
        own = {"page": "/x", "heading": text, "anchor": text}
        answer = {"reply": text, "sources": [*SOURCES, own], "sig": "s1"}
        cases.append((succeeded({"statusCode": 200, "body": answer}), 200, answer))
        limited = {"reply": text, "limited": True}
        cases.append((succeeded({"statusCode": 200, "body": limited}), 200, limited))
        # A degraded answer with a fenced code block and "also see" pages (issue 28.3).
        also = [{"page": "/b", "title": text}, {"page": "/c'd", "title": '"t"'}]
        degraded = {"reply": f"{text}\n\n```\n<b>{text}</b>\n```", "degraded": True,
                    "sources": SOURCES, "also": also}  # fmt: skip
        cases.append((succeeded({"statusCode": 200, "body": degraded}), 200, degraded))
        off = {"reply": text, "degraded": True, "off": True, "sources": []}
        cases.append((succeeded({"statusCode": 200, "body": off}), 200, off))
        for status in (400, 403, 429, 503):
            error = {"error": text}
            cases.append((succeeded({"statusCode": status, "body": error}), status, error))
    unavailable = {"error": vtl.UNAVAILABLE}
    for status in ("FAILED", "TIMED_OUT"):
        execution = {"executionArn": ARN + ":x", "status": status, "error": "States.Timeout",
                     "cause": 'a "cause" with \\ and \u00e9'}  # fmt: skip
        cases.append((json.dumps(execution), 503, unavailable))
    # No statusCode at all: the fail-closed 503, still valid JSON.
    cases.append((succeeded({"body": {"error": "x"}}), 503, {"error": "x"}))
    return cases


NULLS = {"reply": None, "sig": None, "error": None,
         "sources": [{"page": "/a", "heading": None, "anchor": None}]}  # fmt: skip
NULLS_RENDERED = {"reply": "", "sig": "", "error": "",
                  "sources": [{"page": "/a", "heading": "", "anchor": ""}]}  # fmt: skip


def test_every_outcome_renders_valid_json_with_its_status(velocity) -> None:
    cases = _response_cases()
    template = vtl.response_template()
    requests = [
        {"template": template, "body": b, "headers": {}, "requestId": "r"} for b, *_ in cases
    ]
    results = velocity(requests)
    # 8 hostile texts x (answer, limited, degraded, off, 4 error statuses), FAILED,
    # TIMED_OUT, and an output without a statusCode.
    assert len(results) == 8 * 8 + 3
    for (body, status, expected), result in zip(cases, results, strict=True):
        assert result["status"] == status, body
        assert json.loads(result["output"]) == expected, body


def test_a_present_but_null_field_renders_empty_not_template_text(velocity) -> None:
    body = succeeded({"statusCode": 200, "body": NULLS})
    quiet = vtl.response_template()
    loud = quiet.replace("$!util.", "$util.")  # the template before quiet references
    assert loud != quiet
    fixed, naive = velocity(
        [{"template": t, "body": body, "headers": {}, "requestId": "r"} for t in (quiet, loud)]
    )
    assert fixed["status"] == 200 and json.loads(fixed["output"]) == NULLS_RENDERED
    assert "$util.escapeJavaScript" in naive["output"]  # a 200 carrying template text
