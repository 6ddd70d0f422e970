"""The request template's escaping, replayed in Python: hostile headers stay inert strings.

API Gateway's ``$util.escapeJavaScript`` (Apache Commons ``escapeJavaScript``) is emulated
below; the template escapes a header once for the inner JSON (the execution input) and the
whole input once more for the outer JSON (the StartSyncExecution request).
"""

from __future__ import annotations

import json

import pytest

from infra import vtl


def escape_js(text: str) -> str:
    special = {'"': '\\"', "'": "\\'", "\\": "\\\\", "/": "\\/", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\b": "\\b", "\f": "\\f"}  # fmt: skip
    out = []
    for ch in text:
        if ch in special:
            out.append(special[ch])
        elif ord(ch) < 32 or ord(ch) > 0x7F:
            out.append("".join(f"\\u{u:04X}" for u in _utf16(ch)))
        else:
            out.append(ch)
    return "".join(out)


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def unescape_quote(text: str) -> str:
    return text.replace("\\'", "'")  # the template's .replaceAll("\\'", "'")


def render(body: dict, origin: str, viewer: str, *, escape_headers: bool = True) -> dict:
    o = unescape_quote(escape_js(origin)) if escape_headers else origin
    v = unescape_quote(escape_js(viewer)) if escape_headers else viewer
    b = json.dumps(body, separators=(",", ":"))
    inner = f'{{"requestId":"req-1","body":{b},"originVerify":"{o}","viewerAddress":"{v}"}}'
    outer = f'{{\n  "stateMachineArn": "arn",\n  "input": "{unescape_quote(escape_js(inner))}"\n}}'
    return json.loads(json.loads(outer)["input"])


def test_the_template_composes_the_input_the_way_this_replay_does():
    text = vtl.request_template("arn")
    assert "#set($o = $util.escapeJavaScript($origin)" in text
    assert "${q}originVerify${q}:${q}$o${q}" in text
    assert '"input": "$util.escapeJavaScript($inner).replaceAll(' in text


HOSTILE = [
    'x","viewerAddress":"203.0.113.9',
    'it\'s \\"quoted\\" / \u00e9 \U0001f600',
    "line\nbreak\ttab\u0001",
    "back\\'slash",
]


@pytest.mark.parametrize("header", HOSTILE)
def test_hostile_header_values_arrive_verbatim_and_add_no_field(header):
    body = {"message": "what's new?", "page": "/posts/waf"}
    execution_input = render(body, header, "[2001:db8::1]:443")
    assert execution_input == {
        "requestId": "req-1",
        "body": body,
        "originVerify": header,
        "viewerAddress": "[2001:db8::1]:443",
    }


def test_escaping_only_once_breaks_on_a_quote_in_a_header():
    with pytest.raises(json.JSONDecodeError):
        render({"message": "hi"}, 'a"b', "198.51.100.7:1234", escape_headers=False)
