"""The CDK CLI's stderr as `make synth`, `synth-offline` and `deploy` show it.

`python -m chatguard.cdk_output CDK ARGS...` runs the CDK CLI and passes its output through,
with three kinds of line made readable or left out; the exit status is the CLI's own:

- jsii's Python runtime prints what its Node.js process writes outside jsii's protocol as
  Python bytes literals (``b'!!  Node 20 is end-of-life ...\\n'``, its Node.js banner):
  shown as the text they hold;
- "85 feature flags are not configured. Run 'cdk flags --unstable=flags' ...": the CLI
  counts every flag cdk.json leaves at its default, and has no setting to stop saying so
  (aws/aws-cdk-cli issue 913): left out;
- a bare ``.../lib/program.js:1:5591`` line from jsii's runtime, a location with no
  message: left out.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Sequence

DROPPED = (
    re.compile(r"^\d+ feature flags? (is|are) not configured\. Run 'cdk flags"),
    re.compile(r"^\S*/lib/program\.js:\d+:\d+$"),
)
BYTES_LITERAL = re.compile(r"""^b(['"]).*\1$""")


def cleaned(line: str) -> str | None:
    """The line as the user should read it, or None when it says nothing."""
    text = line.rstrip("\n")
    if BYTES_LITERAL.match(text):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return line
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
    if any(pattern.search(text) for pattern in DROPPED):
        return None
    return line


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: python -m chatguard.cdk_output CDK [ARGS...]", file=sys.stderr)
        return 2
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, errors="replace") as cdk:
        assert cdk.stderr is not None
        for line in cdk.stderr:
            shown = cleaned(line)
            if shown is not None:
                sys.stderr.write(shown)
                sys.stderr.flush()
    return cdk.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
