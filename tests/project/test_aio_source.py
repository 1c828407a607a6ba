"""omnisync/aio.py is what scripts/generate_aio.py writes from the blocking classes today."""

import ast
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

from omnisync import aio

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "generate_aio.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_aio", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_module_is_what_the_generator_writes_from_the_blocking_classes():
    generator = load_generator()
    assert generator.MODULE.read_text() == generator.render(), "omnisync/aio.py is stale: run python scripts/generate_aio.py"


def test_check_mode_fails_on_a_stale_module_and_passes_on_the_current_one(tmp_path, monkeypatch):
    assert subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True).returncode == 0
    generator = load_generator()
    stale = tmp_path / "aio.py"
    stale.write_text(generator.render().replace("async def run(", "async def run_renamed(", 1))
    monkeypatch.setattr(generator, "MODULE", stale)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0


def test_every_public_member_of_each_blocking_class_is_written_out_as_a_coroutine_stream_or_property():
    tree = ast.parse(Path(aio.__file__).read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for twin in (aio.OmniCoreAgent, aio.MemoryRouter, aio.RemoteAgent):
        declared = {node.name: node for node in classes[twin.__name__].body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for name in (n for n in dir(twin._blocking_class) if not n.startswith("_")):
            member = inspect.getattr_static(twin._blocking_class, name)
            if inspect.isfunction(member):
                wanted = ast.FunctionDef if getattr(member, "__omnisync_streams__", False) else ast.AsyncFunctionDef
                assert isinstance(declared.get(name), wanted), f"{twin.__name__}.{name} is not written out as it should be"
            elif isinstance(member, property):
                assert isinstance(declared.get(name), ast.FunctionDef), f"{twin.__name__}.{name} is no property in the source"


def test_the_export_list_is_omnisyncs_and_what_only_aio_has():
    import omnisync

    assert set(aio.__all__) == set(omnisync.__all__) | {"RemoteAgent", "set_thread_count", "thread_count"}
