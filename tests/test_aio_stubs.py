"""omnisync/aio.pyi is what scripts/generate_aio_stubs.py writes from the blocking classes today."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "generate_aio_stubs.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_aio_stubs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_stub_matches_the_blocking_classes():
    generator = load_generator()
    assert generator.STUB.read_text() == generator.render(), "omnisync/aio.pyi is stale: run python scripts/generate_aio_stubs.py"


def test_the_stub_declares_every_public_member_of_each_twin_as_a_coroutine_or_property():
    import ast
    import inspect

    from omnisync import aio

    tree = ast.parse(load_generator().STUB.read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for twin in (aio.OmniCoreAgent, aio.MemoryRouter):
        declared = {node.name: node for node in classes[twin.__name__].body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for name in (n for n in dir(twin._blocking_class) if not n.startswith("_")):
            member = inspect.getattr_static(twin, name)
            if inspect.iscoroutinefunction(member):
                assert isinstance(declared.get(name), ast.AsyncFunctionDef), f"{twin.__name__}.{name} is no coroutine in the stub"
            elif isinstance(member, property):
                assert isinstance(declared.get(name), ast.FunctionDef), f"{twin.__name__}.{name} is no property in the stub"


def test_the_wheel_carries_the_stub():
    import configparser

    config = configparser.ConfigParser()
    config.read(SCRIPT.parents[1] / "setup.cfg")
    shipped = [name.strip() for name in config["options.package_data"]["omnisync"].split(",")]
    assert "aio.pyi" in shipped and "py.typed" in shipped
