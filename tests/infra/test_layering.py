"""Infrastructure does not depend on the local runtime: no module under infra/ imports
`local` (the contract both apply lives in steps/lib/request/)."""

from __future__ import annotations

import ast
from pathlib import Path

INFRA = Path(__file__).resolve().parents[2] / "infra"


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_infra_module_imports_the_local_runtime() -> None:
    modules = sorted(INFRA.rglob("*.py"))
    assert len(modules) > 20  # the walk sees the package, not an empty folder
    offenders = [str(p.relative_to(INFRA)) for p in modules if "local" in _imported_roots(p)]
    assert offenders == []
