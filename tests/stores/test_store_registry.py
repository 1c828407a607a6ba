"""The registry owns a backend: a kind declared by one entry (and its module) is opened, checked,
read by the command line and diagnosed, and nothing outside the registry branches on a kind."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from omnisync.cli.main import main as cli_main
from omnisync.doctor import OK, diagnose
from omnisync.errors import ConfigurationError, StoreError
from omnisync.messages import Message
from omnisync.router import MemoryRouter, existing_router
from omnisync.stores.in_memory import InMemoryStore
from omnisync.stores.registry import KINDS, StoreKind, load

PACKAGE = Path(__file__).resolve().parents[2] / "omnisync"
if not PACKAGE.is_dir():  # nox runs the suite from a copy beside the installed wheel
    import omnisync as _installed

    PACKAGE = Path(_installed.__file__).parent

# --- a backend of the test's own: a module (this one) and one entry ------------------------------

_SHELVES: dict[str, "ShelfStore"] = {}


class ShelfStore(InMemoryStore):
    """An in-process store reached by a URL: the same URL opens the same shelf."""

    kind = "shelf"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "ShelfStore":
        return _SHELVES.setdefault(url, cls())


def check_url(url: str) -> None:
    if url.count("/") != 2:
        raise ConfigurationError(f"{url!r}: a shelf URL is shelf://NAME")


def open_existing(url: str, options: dict[str, Any], build: Any) -> Any:
    if url not in _SHELVES:
        raise StoreError(f"no store at {url}")
    return build()


def doctor(report: Any, url: str, timeout: float) -> None:
    report.add("reachable", OK, f"shelf {url} holds {len(_SHELVES[url].sessions())} sessions")


SHELF = StoreKind(
    "shelf",
    f"{__name__}:ShelfStore",
    environment="SHELF_URL",
    example_url="shelf://one",
    schemes=("shelf",),
    own_options=("label",),
    check_url=f"{__name__}:check_url",
    open_existing=f"{__name__}:open_existing",
    doctor=f"{__name__}:doctor",
)


@pytest.fixture
def shelf(monkeypatch):
    monkeypatch.setitem(KINDS, "shelf", SHELF)
    _SHELVES.clear()
    yield
    _SHELVES.clear()


def test_a_backend_is_its_module_and_one_registry_entry(shelf, monkeypatch, capsys):
    with pytest.raises(StoreError, match="no store at shelf://one"):
        existing_router("shelf", url="shelf://one")
    assert _SHELVES == {}  # looking created nothing
    with pytest.raises(ConfigurationError, match="does not take colour; it takes connect_timeout, timeout, label only"):
        MemoryRouter("shelf", url="shelf://one", colour="red")
    with pytest.raises(ConfigurationError, match="is a shelf URL"):
        MemoryRouter("sql", url="shelf://one")
    with pytest.raises(ConfigurationError, match="a shelf URL is shelf://NAME"):
        MemoryRouter("shelf", url="shelf://one/two")
    with pytest.raises(ConfigurationError, match="needs SHELF_URL"):
        MemoryRouter("shelf")
    monkeypatch.setenv("SHELF_URL", "shelf://one")
    with MemoryRouter("shelf", label="mine") as router:
        assert type(router.store) is ShelfStore
        router.store.append("a", "s", [Message(role="user", content="hi")])

    assert cli_main(["sessions", "--url", "shelf://one", "--json"]) == 0
    assert [s["session_id"] for s in json.loads(capsys.readouterr().out)] == ["s"]
    assert [(c.status, c.detail) for c in diagnose("shelf", "shelf://one", 1.0).checks] == [(OK, "shelf shelf://one holds 1 sessions")]


def test_every_function_an_entry_names_can_be_loaded():
    for kind in KINDS.values():
        references = [kind.store, kind.store_for_url, kind.client_accepts, kind.check_url, kind.open_existing, kind.doctor]
        for reference in filter(None, references):
            assert callable(load(reference)), reference
        assert kind.store_class().kind == kind.name  # type: ignore[attr-defined]
        assert kind.networked == (kind.open_existing is not None) == (kind.doctor is not None), kind.name


def test_a_sqlite_url_opens_the_subclass_the_registry_names(tmp_path):
    from omnisync.stores.sql.sqlite import SQLiteStore

    url = f"sqlite:///{tmp_path / 'memory.db'}"
    assert KINDS["sql"].store_class(url) is SQLiteStore
    from omnisync.stores.sql.postgres import PostgresStore

    assert KINDS["sql"].store_class("postgresql+psycopg://u@h/db") is PostgresStore  # the driver's subclass
    assert KINDS["sql"].store_class("postgresql+psycopg2://u@h/db") is load(KINDS["sql"].store)
    with MemoryRouter("sql", url=url) as router:
        assert type(router.store) is SQLiteStore


# --- no branch on a kind outside the registry, and no import circle -----------------------------


def test_no_module_but_the_registry_compares_a_value_with_a_store_kind():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "stores" / "registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                constants = [c for c in (node.left, *node.comparators) if isinstance(c, (ast.Constant, ast.Tuple, ast.List, ast.Set))]
                values = {e.value for c in constants for e in (c.elts if hasattr(c, "elts") else [c]) if isinstance(e, ast.Constant)}
                if values & set(KINDS):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert found == []


def _imports(path: Path) -> set[str]:
    """The omnisync modules ``path`` imports when it is imported (not those imported inside functions)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    package = package.removesuffix(".__init__")
    found = set()
    tree = ast.parse(path.read_text())
    nodes = [n for top in tree.body for n in ([top] if not isinstance(top, (ast.Try, ast.If)) else ast.walk(top))]
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in _module_files() else base for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("omnisync")}


def _module_files() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def test_the_stores_reach_no_module_that_imports_the_stores_back():
    """The folder loop stores -> store_options -> stores.registry, and the file circle sql <-> sqlite."""
    files = _module_files()
    graph = {name: {m for m in _imports(path) if m in files and m != name} for name, path in files.items()}
    assert "omnisync.stores.sql.sqlite" not in {m for path in [files["omnisync.stores.sql.store"]] for m in _imports(path)}

    def reaches_stores(start: str) -> list[str] | None:
        paths, todo = {start: [start]}, [start]
        while todo:
            current = todo.pop()
            for target in graph[current]:
                if target.startswith("omnisync.stores.") and target != "omnisync.stores":
                    return paths[current] + [target]
                if target not in paths:
                    paths[target] = paths[current] + [target]
                    todo.append(target)
        return None

    loops = []
    for name in (n for n in files if n.startswith("omnisync.stores.")):
        for target in graph[name]:
            if not target.startswith("omnisync.stores"):
                loop = reaches_stores(target)
                if loop:
                    loops.append(" -> ".join([name, *loop]))
    assert loops == []


def test_only_env_reads_the_environment():
    """ARCHITECTURE.md: ``_env.py`` is the only module of omnisync that reads environment variables."""
    readers = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "_env.py":
            continue
        tree = ast.parse(path.read_text())
        written = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)}
        for node in ast.walk(tree):
            is_environ = isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and getattr(node.value, "id", None) == "os"
            if is_environ and id(node) not in written:
                readers.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert readers == []
