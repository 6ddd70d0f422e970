"""API Gateway mapping templates (Velocity) between POST /chat and StartSyncExecution.

Request: the execution input of docs/internals.md, built as a JSON string. Header values
are client-controlled, so each is escaped for the inner JSON and the whole input escaped
again for the outer string; ``escapeJavaScript`` also writes ``\\'``, which is not valid
JSON, so each escape is followed by undoing that one sequence.

Response: StartSyncExecution answers 200 even when the execution FAILED or TIMED_OUT, so
the template reads ``status`` and the state output's ``statusCode`` and sets the HTTP
status itself; the body is written field by field (Velocity has no JSON serializer for a
parsed object), one block per field of steps/lib/request/reply.py, which reads them from
openapi.json: a field the contract defines cannot be left out of the template.
"""

from __future__ import annotations

from steps.lib.request import reply

UNAVAILABLE = "The chat is unavailable right now. Please try again later."
# The headers the request template reads; CloudFront adds the first and forwards the second
# (blocks/site_distribution.py), so both sides name them from here.
ORIGIN_HEADER = "X-Origin-Verify"
VIEWER_ADDRESS = "CloudFront-Viewer-Address"
_UNESCAPE = '.replaceAll("\\\\\'", "\'")'


def _header(variable: str, name: str) -> str:
    # Header names are matched case-insensitively: HTTP says they are, proxies differ.
    return (
        f'#set(${variable} = "")\n'
        f"#foreach($name in $headers.keySet())"
        f"#if($name.toLowerCase() == '{name.lower()}')#set(${variable} = $headers.get($name))#end"
        f"#end\n"
    )


def request_template(state_machine_arn: str) -> str:
    return (
        "#set($headers = $input.params().header)\n"
        + _header("origin", ORIGIN_HEADER)
        + _header("viewer", VIEWER_ADDRESS)
        + f"#set($o = $util.escapeJavaScript($origin){_UNESCAPE})\n"
        + f"#set($v = $util.escapeJavaScript($viewer){_UNESCAPE})\n"
        + "#set($b = $input.json('$'))\n"
        + "#set($q = '\"')\n"
        + '#set($inner = "{${q}requestId${q}:${q}$context.requestId${q},${q}body${q}:$b,'
        + '${q}originVerify${q}:${q}$o${q},${q}viewerAddress${q}:${q}$v${q}}")\n'
        + "{\n"
        + f'  "stateMachineArn": "{state_machine_arn}",\n'
        + f'  "input": "$util.escapeJavaScript($inner){_UNESCAPE}"\n'
        + "}\n"
    )


def _string_field(key: str) -> str:
    # Quiet reference ($!): a field present but null renders "" rather than the reference's
    # own text (Velocity prints an unresolved reference verbatim).
    return (
        f'#if($body.containsKey("{key}"))$sep"{key}":"$!util.escapeJavaScript($body.get("{key}")){_UNESCAPE}"'
        '#set($sep = ",")#end'
    )


def _true_field(key: str) -> str:
    return f'#if($body.get("{key}") == true)$sep"{key}":true#set($sep = ",")#end'


def _objects_field(key: str, item_fields: tuple[str, ...]) -> str:
    items = ",".join(
        f'"{name}":"$util.escapeJavaScript("$!s.{name}"){_UNESCAPE}"' for name in item_fields
    )
    return (
        f'#if($body.containsKey("{key}"))$sep"{key}":['
        f'#foreach($s in $body.get("{key}"))'
        "{" + items + "}"
        "#if($foreach.hasNext),#end#end]"
        '#set($sep = ",")#end'
    )


def _field(field: reply.ReplyField) -> str:
    if field.kind == "string":
        return _string_field(field.name)
    if field.kind == "true":
        return _true_field(field.name)
    return _objects_field(field.name, field.item_fields)


def response_template() -> str:
    return (
        "#set($status = $input.path('$.status'))\n"
        "#if($status == 'SUCCEEDED')\n"
        "#set($out = $util.parseJson($input.path('$.output')))\n"
        # Set an override only once per response (a second set is a 5XX): choose, then set.
        "#set($code = 503)\n"
        "#if($out.statusCode)#set($code = $out.statusCode)#end\n"
        "#set($context.responseOverride.status = $code)\n"
        "#set($body = $out.body)\n"
        '#set($sep = "")\n'
        "{" + "".join(_field(f) for f in reply.reply_fields()) + "}\n"
        "#else\n"
        "#set($context.responseOverride.status = 503)\n"
        f'{{"error":"{UNAVAILABLE}"}}\n'
        "#end\n"
    )


def error_template() -> str:
    return f'{{"error":"{UNAVAILABLE}"}}'
