"""Every public name of ``omnisync`` and ``omnisync.aio``, and every public method and property
of their classes, has a docstring: the API reference (docs/reference/) is generated from them."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from types import ModuleType

import omnisync
import omnisync.aio


def public_members(cls: type) -> Iterator[tuple[str, object]]:
    """The methods and properties a class defines or inherits from omnisync's own classes."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("omnisync"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") or not (callable(member) or isinstance(member, (property, staticmethod, classmethod))):
                continue
            yield f"{cls.__name__}.{name}", member


def alias_has_docstring(module: ModuleType, name: str) -> bool:
    """A type alias has no ``__doc__`` of its own: its docstring is the string right after its
    assignment, in the module ``module`` imports it from (as the API reference reads it)."""
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
            source = importlib.import_module("." * node.level + (node.module or ""), module.__package__)
            body = ast.parse(inspect.getsource(source)).body
            for statement, following in zip(body, body[1:]):
                assigned = [target.id for target in getattr(statement, "targets", []) if isinstance(target, ast.Name)]
                if name in assigned:
                    return isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)
    return False


def undocumented(module: ModuleType) -> list[str]:
    missing = []
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismodule(value):
            documented = bool((value.__doc__ or "").strip())
        else:
            documented = alias_has_docstring(module, name)
        if not documented:
            missing.append(f"{module.__name__}.{name}")
        if inspect.isclass(value):
            for qualified, member in public_members(value):
                documented_by = member if isinstance(member, property) else getattr(member, "__func__", member)
                if not (documented_by.__doc__ or "").strip():
                    missing.append(f"{module.__name__}.{qualified}")
    return sorted(set(missing))


def test_every_public_name_of_omnisync_has_a_docstring():
    assert undocumented(omnisync) == []


def test_every_public_name_of_omnisync_aio_has_a_docstring():
    assert undocumented(omnisync.aio) == []


def test_the_walk_sees_a_missing_docstring():
    module = ModuleType("omnisync.example")

    class Documented:
        """Has one."""

        def method(self) -> None:
            pass

    Documented.__module__ = "omnisync.example"
    module.__all__ = ["Documented"]  # type: ignore[attr-defined]
    module.Documented = Documented  # type: ignore[attr-defined]
    assert undocumented(module) == ["omnisync.example.Documented.method"]
