"""No two modules of the package import each other round, and no two folders do, counting every
import: those inside functions and under ``TYPE_CHECKING`` too (a circle there is still two
concepts without an order). At the folder level each subpackage (``stores``, ``run_state``...)
and each module at the top (``runner``, ``run_events``...) is one node; ``omnisync/__init__.py``,
which re-exports the public names, is left out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import omnisync

PACKAGE = Path(omnisync.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("omnisync", *path.relative_to(PACKAGE).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _every_import(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {module for module in found if module in modules and module != name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_no_modules_import_each_other_round():
    modules = _modules()
    graph = {name: _every_import(name, path, modules) for name, path in modules.items()}
    assert _circles(graph) == []


def _folder(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def _folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {_folder(name): set() for name in graph if name != "omnisync"}
    for name, imported in graph.items():
        if name == "omnisync":
            continue
        folders[_folder(name)] |= {_folder(target) for target in imported if target != "omnisync" and _folder(target) != _folder(name)}
    return folders


def test_no_folders_import_each_other_round():
    modules = _modules()
    graph = {name: _every_import(name, path, modules) for name, path in modules.items()}
    assert _circles(_folder_graph(graph)) == []


def _layers_of_the_architecture_page() -> dict[str, int]:
    """Each folder and module the page's "Layers" list names, with the number of its step."""
    page = (Path(__file__).resolve().parents[2] / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = page[page.index("## Layers") : page.index("## Every module")]
    layers: dict[str, int] = {}
    for number, item in re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", section, re.M | re.S):
        for name in re.findall(r"`(\w+)(?:/|\.py)`", item):
            layers.setdefault(name, int(number))  # where it is placed; a later step may mention it as what it uses
    return layers


def test_no_folder_imports_one_of_a_later_step_of_the_architecture_pages_layers():
    modules = _modules()
    folders = _folder_graph({name: _every_import(name, path, modules) for name, path in modules.items()})
    layers = _layers_of_the_architecture_page()
    assert len(layers) >= 20 and set(layers) <= set(folders), sorted(set(layers) - set(folders))
    upward = sorted(f"{a} (step {layers[a]}) imports {b} (step {layers[b]})" for a in layers for b in folders[a] if layers.get(b, 0) > layers[a])
    assert upward == []


def test_a_folder_circle_is_found_through_modules_that_do_not_circle():
    graph = {
        "omnisync.model.client": {"omnisync.telemetry.chat"},
        "omnisync.telemetry.chat": set(),
        "omnisync.telemetry.run": {"omnisync.model.completion"},
        "omnisync.model.completion": set(),
        "omnisync": {"omnisync.model.client"},
    }
    assert _circles(graph) == []
    assert _circles(_folder_graph(graph)) == [["model", "telemetry"]]


def test_a_circle_is_found_when_there_is_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
