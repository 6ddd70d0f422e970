"""The docs are self-contained and their commands work as written: no reference outside
the repository, every relative link resolves, every `chatguard` command line in the README
and docs/ parses with the real CLI, and the README puts `chatguard` on PATH before its
first bare use."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from chatguard.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
COMMAND = re.compile(r"^(?:\$ )?(?:\.venv/bin/)?chatguard (.+)$")


def _commands(doc: Path) -> list[tuple[int, str]]:
    """(line number, argument string) of every `chatguard` command in a code block."""
    text = doc.read_text(encoding="utf-8")
    found = []
    for block in FENCE.finditer(text):
        first_line = text[: block.start(1)].count("\n") + 1
        joined = block.group(1).replace("\\\n", " ")  # shell line continuations
        for offset, line in enumerate(joined.splitlines()):
            match = COMMAND.match(line.strip())
            if match:
                found.append((first_line + offset, match.group(1)))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_nothing_outside_the_repository_is_cited(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    assert "shared/" not in text and "DESIGN.md" not in text
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def _case(doc: Path, number: int, arguments: str) -> object:
    return pytest.param(arguments, id=f"{doc.name}:{number}")


CASES = [_case(doc, n, args) for doc in DOCS for n, args in _commands(doc)]


def test_the_docs_have_commands_to_check() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("arguments", CASES)
def test_every_documented_command_parses(arguments: str) -> None:
    argv = shlex.split(arguments, comments=True)
    try:
        parsed = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse refused it
        pytest.fail(f"`chatguard {arguments}` does not parse (exit {exc.code})")
    assert callable(parsed.func)


def test_the_readme_activates_the_venv_before_its_first_bare_command() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    activate = next(i for i, line in enumerate(lines) if line.startswith(". .venv/bin/activate"))
    first_bare = min(n for n, _ in _commands(ROOT / "README.md")) - 1
    assert activate < first_bare


def test_the_activated_venv_has_chatguard_on_path() -> None:
    if not (ROOT / ".venv" / "bin" / "activate").exists():
        pytest.skip("no .venv here (make venv creates it)")
    done = subprocess.run(
        ["bash", "-c", ". .venv/bin/activate && chatguard --version"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("chatguard "), done.stderr


# -- figures the docs quote, computed from the code -------------------------------------
# Reserve and "messages a day" figures move whenever pricing or metering does: these tests
# say the line the code prints now, so after such a change the docs are updated from the
# assertion message (or `python -m tests.docs_figures`).


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _serve_settings(arguments: str) -> object:
    """The settings `chatguard serve ARGS` runs with (cdk.json, then the flags)."""
    from local.commands.chat_demo_serve import local_settings

    args = build_parser().parse_args(shlex.split(arguments, comments=True))
    return local_settings(
        daily_ceiling_usd=args.daily_ceiling_usd,
        monthly_ceiling_usd=args.monthly_ceiling_usd,
        visitor_message_limit=args.visitor_message_limit,
        visitor_cost_share=args.visitor_cost_share,
    )


def _quoted_lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_the_readme_quotes_what_its_serve_command_admits() -> None:
    from local.commands.limits import admitted

    readme = _text("README.md")
    command = next(
        a for n, a in _commands(ROOT / "README.md") if a.startswith("serve --port 8788 --visitor")
    )
    counts = admitted(_serve_settings(command))  # type: ignore[arg-type]
    said = f"{counts['day']} worst-case messages a day, {counts['visitor']} per visitor"
    assert said in readme, f"README should say: {said}"


def test_docs_local_quotes_the_limits_lines_the_code_prints() -> None:
    from local.commands.limits import summary

    text = _text("docs/local.md")
    default = summary(_serve_settings("serve"))[0]  # type: ignore[arg-type]
    assert _quoted_lines(text, "limits: ") == [default], f"docs/local.md should show: {default}"
    command = re.search(r"^chatguard (serve --daily-ceiling-usd \S+)$", text, re.M)
    assert command, "docs/local.md shows the command that prints the warning"
    warning = summary(_serve_settings(command.group(1)))[1]  # type: ignore[arg-type]
    shown = _quoted_lines(text, "warning: a visitor's cap")
    assert shown == [warning], f"docs/local.md should show: {warning}"


def test_docs_operating_quotes_the_reserve_the_code_computes() -> None:
    from ops import verify
    from ops.render import usd
    from steps.lib.money.pricing import largest_reserve_micros
    from steps.lib.runtime.settings import Settings, cdk_context

    reserve = largest_reserve_micros(Settings.from_mapping(cdk_context()["chatguard"]))
    text = _text("docs/operating.md")
    assert f"largest reserve one message can make: {usd(reserve)}\n" in text
    settled = re.search(r"(\d+) settled \((\$[\d.]+) reserved", text)
    assert settled and settled.group(2) == usd(int(settled.group(1)) * reserve)
    target = verify.Target("", "", 0, 0.0, reserve)
    notice = verify.spend_notice(target)
    quoted = re.search(r"^(verify sends at most .*) \.\.\.$", text, re.M)
    assert quoted and notice.startswith(quoted.group(1)), f"should start: {notice}"


def _money(cell: str) -> float:
    found = re.match(r"\s*([\d.]+)", cell)
    assert found, cell
    return float(found.group(1))


def test_the_idle_cost_table_adds_up_and_names_the_worst_month() -> None:
    from steps.lib.runtime.settings import cdk_context

    readme = _text("README.md")
    section = readme.split("### What it costs when idle", 1)[1].split("\n### ", 1)[0]
    rows = dict(
        (cells[1].strip(), cells[2].strip())
        for cells in (line.split("|") for line in section.splitlines() if line.startswith("| "))
    )
    # Two counting rules, two blocks; each listed origin adds two (infra/blocks/edge_firewall.py).
    waf = _money(rows["WAF web ACL + 4 rules"])
    assert waf == 5.00 + 4 * 1.00
    alarms_row = next(k for k in rows if k.startswith("CloudWatch alarms"))
    count = int(re.search(r"\((\d+) standard alarms\)", alarms_row).group(1))  # type: ignore[union-attr]
    free = int(re.search(r"beyond the (\d+) the free tier", rows[alarms_row]).group(1))  # type: ignore[union-attr]
    assert round(_money(rows[alarms_row]), 2) == round(max(0, count - free) * 0.10, 2)
    dashboard = rows["CloudWatch dashboard"]
    assert "first 3 dashboards per account are free" in dashboard and _money(dashboard) == 0
    idle = round(waf + _money(rows[alarms_row]) + _money(dashboard), 2)
    assert f"about **USD {idle:.2f} per month**" in section
    ceiling = float(cdk_context()["chatguard"]["monthly_ceiling_usd"])
    worst = (
        f"the idle stack (USD {idle:.2f}) plus the model's monthly ceiling\n"
        f"(`monthly_ceiling_usd`, USD {ceiling:.2f}) is **USD {idle + ceiling:.2f}**"
    )
    assert worst in section, f"README should say: {worst}"


def test_the_embed_section_leads_with_what_works_on_any_host() -> None:
    """A static site elsewhere needs the widget's full URLs and its origin listed; the
    same-origin shortcut comes second."""
    section = _text("README.md").split("## Embed the widget", 1)[1].split("\n## ", 1)[0]
    blocks = FENCE.findall(section)
    assert 'endpoint="https://' in blocks[0] and 'src="https://' in blocks[0]
    assert section.index("site_origins") < section.index(blocks[0])
    assert "endpoint" not in blocks[1]
