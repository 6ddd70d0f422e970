"""No import cycle inside steps/: a module never needs, even lazily, one that needs it.

The graph counts every import statement, function-level (lazy) ones included: a lazy import
hides a cycle from the interpreter until the wrong module is imported first, which is how
``models -> bedrock/offline -> models`` lived unnoticed.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(root: Path, top: str = "steps") -> dict[str, set[str]]:
    """module -> the modules under ``top`` it imports (a ``from p import m`` of a submodule
    ``m`` is an edge to ``p.m``)."""
    files = {module_name(p, root): p for p in sorted((root / top).rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, path.name == "__init__.py")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]  # fmt: skip
            else:
                continue
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (depth-first search, three colours)."""
    state: dict[str, int] = {}  # absent: unvisited, 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle_inside_steps() -> None:
    graph = import_graph(ROOT)
    assert "steps.lib.providers.models" in graph  # the walk sees the real tree
    assert find_cycle(graph) is None


def test_the_check_finds_the_old_circle(tmp_path: Path) -> None:
    """The shape issue 12 broke: the chooser imports its implementations lazily and they
    import their types back from it."""
    lib = tmp_path / "steps" / "lib"
    lib.mkdir(parents=True)
    for name, text in {
        "__init__.py": "",
        "models.py": "class ModelReply: ...\ndef responder():\n    from . import bedrock\n",
        "bedrock.py": "from .models import ModelReply\n",
    }.items():
        (lib / name).write_text(text, encoding="utf-8")
    (tmp_path / "steps" / "__init__.py").write_text("", encoding="utf-8")
    assert find_cycle(import_graph(tmp_path)) == [
        "steps.lib.bedrock", "steps.lib.models", "steps.lib.bedrock",
    ]  # fmt: skip


def test_the_check_finds_a_circle_put_back_into_the_real_tree(tmp_path: Path) -> None:
    """The leaf importing its chooser again (lazily, in a function) is found."""
    shutil.copytree(
        ROOT / "steps", tmp_path / "steps", ignore=shutil.ignore_patterns("__pycache__")
    )
    leaf = tmp_path / "steps" / "lib" / "providers" / "interface.py"
    leaf.write_text(
        leaf.read_text(encoding="utf-8") + "\n\ndef _back():\n    from . import models\n",
        encoding="utf-8",
    )
    cycle = find_cycle(import_graph(tmp_path))
    assert cycle is not None
    assert "steps.lib.providers.interface" in cycle and "steps.lib.providers.models" in cycle


def test_the_library_packages_import_nothing_themselves() -> None:
    """A package ``__init__`` that re-exported its modules would load all of them (numpy
    through the embedders) for a gate step that needs one: they hold a docstring only."""
    inits = sorted((ROOT / "steps" / "lib").glob("*/__init__.py"))
    assert len(inits) == 6
    for init in inits:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        body = [node for node in tree.body if not isinstance(node, ast.Expr)]
        assert body == [], f"{init.parent.name}/__init__.py runs code"
        assert ast.get_docstring(tree), f"{init.parent.name}/__init__.py says nothing"
