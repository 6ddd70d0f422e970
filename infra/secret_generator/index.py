"""Custom resource: create one SSM SecureString secret, generated here, never in a template.

CloudFormation cannot create SecureString parameters, and a value written into a template
would sit in cdk.out, the template bucket and the stack's history. This function generates
the value at deploy time, in the stack's account, in the format of docs/internals.md::

    {"current": "<random>", "previous": null, "rotated_at": <unix seconds>}

- Create: write the parameter; an existing one (a redeploy after a failed stack) is kept,
  never overwritten, so a visitor salt or live origin secret is not changed under users.
- Update: a new name creates the new parameter (CloudFormation then deletes the old one);
  the same name keeps the value: rotation is `chatguard rotate`'s job, not a deploy's.
- Delete: remove the parameter.

With ``Expose: current`` (the origin secret only) the current value is returned as the
attribute ``Value`` with NoEcho, for CloudFront's origin header; every deploy re-reads it
(the resource's ``ReadNonce`` changes per synth), so a deploy after a rotation writes the
rotated value and never an old one. Nothing here logs a value or the response data.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
import urllib.request
from collections.abc import Callable
from typing import Any

log = logging.getLogger()
log.setLevel(logging.INFO)

SECRET_BYTES = 32  # 256 bits of entropy, URL-safe text: also valid in an HTTP header
FAILED_ID = "chatguard-secret-not-created"

Sender = Callable[[str, dict[str, Any]], None]


def handler(event: dict[str, Any], context: Any) -> None:
    import boto3  # the runtime's boto3: put/get/delete_parameter exist in every version

    respond(event, ssm=boto3.client("ssm"), sender=_put)


def respond(event: dict[str, Any], *, ssm: Any, sender: Sender) -> None:
    """Do the request and always answer CloudFormation, or the stack would hang for an hour."""
    base = {
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
    }
    try:
        physical_id, data = apply(event, ssm)
    except Exception as exc:  # report any failure; CloudFormation then rolls back
        log.error(json.dumps({"request": event["RequestType"], "error": type(exc).__name__}))
        reply = {
            **base,
            "Status": "FAILED",
            "Reason": f"{type(exc).__name__}: {exc}"[:500],
            "PhysicalResourceId": event.get("PhysicalResourceId") or FAILED_ID,
        }
    else:
        reply = {**base, "Status": "SUCCESS", "PhysicalResourceId": physical_id}
        if data:
            reply.update(Data=data, NoEcho=True)
    log.info(json.dumps({"request": event["RequestType"], "status": reply["Status"]}))
    sender(event["ResponseURL"], reply)


def apply(event: dict[str, Any], ssm: Any) -> tuple[str, dict[str, str]]:
    props = event.get("ResourceProperties", {})
    name = str(props.get("ParameterName", ""))
    kind = event["RequestType"]
    if kind == "Delete":
        _delete(ssm, event.get("PhysicalResourceId", ""))
        return event.get("PhysicalResourceId", FAILED_ID), {}
    if not name.startswith("/"):
        raise ValueError("ParameterName must be an absolute SSM path such as /chatguard/x")
    if kind == "Create" or event.get("PhysicalResourceId") != name:
        _create(ssm, name, str(props.get("Description", "")))
    data = {"Value": current(ssm, name)} if props.get("Expose") == "current" else {}
    return name, data


def new_value(now: float | None = None) -> str:
    return json.dumps(
        {
            "current": secrets.token_urlsafe(SECRET_BYTES),
            "previous": None,
            "rotated_at": int(time.time() if now is None else now),
        }
    )


def current(ssm: Any, name: str) -> str:
    text = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
    value = json.loads(text)["current"]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} has no current value")
    return value


def _create(ssm: Any, name: str, description: str) -> None:
    try:
        ssm.put_parameter(
            Name=name,
            Description=description[:1024],
            Value=new_value(),
            Type="SecureString",
            Overwrite=False,
            Tier="Standard",
        )
    except ssm.exceptions.ParameterAlreadyExists:
        log.info(json.dumps({"parameter": name, "kept": "already exists"}))


def _delete(ssm: Any, name: str) -> None:
    if not name.startswith("/"):
        return  # a Create that failed before making anything
    with contextlib.suppress(ssm.exceptions.ParameterNotFound):
        ssm.delete_parameter(Name=name)


def _put(url: str, reply: dict[str, Any]) -> None:
    body = json.dumps(reply).encode()
    request = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
