"""No module of the project imports one that imports it back, directly or through others.

Every import counts, the ones inside functions too: a lazy import still ties two modules
together (ops/doctor.py and ops/doctor_cli.py did so until each took its notice from a leaf).
Importing `a.b.c` also runs `a` and `a.b`, so those packages are edges as well."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("chatguard", "indexer", "infra", "local", "ops", "statemachine", "steps")


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, a package by its __init__.py."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    base = base[: len(base) - level + (1 if is_package else 0)]
    return ".".join([*base, name] if name else base)


def imports_of(module: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The project modules `module` imports anywhere in its body, with their packages."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node.level, node.module)
            targets.add(source)
            # `from pkg import mod` imports the module pkg.mod, not just the package.
            targets.update(f"{source}.{alias.name}" for alias in node.names)
    edges: set[str] = set()
    own_packages = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            ancestor = ".".join(parts[:i])
            if ancestor in known and ancestor not in own_packages:
                edges.add(ancestor)
    edges.discard(module)
    return edges


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, set())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    known = module_files(root, packages)
    return {module: imports_of(module, path, known) for module, path in known.items()}


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) > 150  # the walk sees the project, not an empty folder
    assert "local.engine.runtime" in graph["local.commands.chat_demo_serve"]
    assert circles(graph) == []


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_lazy_import_back_is_a_circle(tmp_path: Path) -> None:
    # The shape the doctor had: the command imports the parser's notice at the top, the
    # parser imports the command inside a function.
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/doctor.py": "from .doctor_cli import NOTICE\n",
            "pkg/doctor_cli.py": "NOTICE = 1\n\ndef run():\n    from .doctor import command\n",
        },
    )
    assert circles(import_graph(tmp_path, ["pkg"])) == [["pkg.doctor", "pkg.doctor_cli"]]


def test_a_circle_through_a_third_module_and_a_package(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import thing\n",
            "pkg/a.py": "from other.b import x\n",
            "other/__init__.py": "",
            "other/b.py": "import pkg.c\n",
            "pkg/c.py": "",
        },
    )
    # other.b imports pkg.c, which first runs pkg/__init__.py, which imports pkg.a.
    assert circles(import_graph(tmp_path, ["pkg", "other"])) == [["other.b", "pkg", "pkg.a"]]


def test_a_leaf_both_sides_read_is_no_circle(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/notice.py": "NOTICE = 1\n",
            "pkg/doctor.py": "from .notice import NOTICE\n",
            "pkg/doctor_cli.py": "from .notice import NOTICE\n\ndef run():\n"
            "    from .doctor import command\n",
        },
    )
    assert circles(import_graph(tmp_path, ["pkg"])) == []
