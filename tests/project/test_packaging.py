"""What a user installs: every module ships, the pytest plugin loads without its extras,
the suite can run against the installed wheel, and the vendored OpenAPI subset is current."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from importlib.metadata import distribution
from pathlib import Path

import pytest

import omnisync

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = Path(omnisync.__file__).resolve().parent


def test_every_folder_of_python_files_in_the_package_is_a_package():
    """setup.cfg's ``packages = find:`` skips a folder without __init__.py, and the wheel then lacks it."""
    folders = {path.parent for path in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in path.parts}
    assert folders, PACKAGE_DIR
    not_packages = sorted(str(folder.relative_to(PACKAGE_DIR)) for folder in folders if not (folder / "__init__.py").exists())
    assert not_packages == []


def test_every_module_of_the_package_imports():
    modules = pkgutil.walk_packages(omnisync.__path__, "omnisync.")
    names = [info.name for info in modules if not info.name.endswith(".__main__")]  # those run a command
    assert "omnisync.stores.sql.store" in names and "omnisync.testing.plugin" in names
    for name in names:
        importlib.import_module(name)


@pytest.mark.skipif(os.environ.get("OMNISYNC_TEST_INSTALLED") != "1", reason="only when nox runs the suite against the built wheel")
def test_the_suite_runs_against_the_installed_wheel_not_the_source_tree():
    assert "site-packages" in PACKAGE_DIR.parts, PACKAGE_DIR
    assert not (PACKAGE_DIR.parent / "setup.cfg").exists()
    direct_url = distribution("omnisync").read_text("direct_url.json")
    assert direct_url is None or not json.loads(direct_url).get("dir_info", {}).get("editable"), direct_url


def test_the_pytest_plugin_loads_without_vcrpy_and_names_the_extra_when_a_cassette_is_used(tmp_path):
    """A user's own project: omnisync and pytest installed, vcrpy not (hidden here with sys.modules)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from omnisync.errors import MissingDependencyError

            def test_plain():
                assert 1 + 1 == 2

            def test_cassette_names_the_extra(omnisync_cassette):
                with pytest.raises(MissingDependencyError, match=r"pip install 'omnisync\\[cassettes\\]'"):
                    with omnisync_cassette("anything"):
                        pass
            """
        )
    )
    hide_vcrpy = "import sys; sys.modules['vcr'] = None; import pytest; sys.exit(pytest.main(['-q']))"
    done = subprocess.run([sys.executable, "-c", hide_vcrpy], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_vendored_openapi_subset_is_what_the_script_cuts_from_the_full_description(tmp_path):
    full = os.environ.get("OMNISYNC_OPENAPI_FULL")
    if not full:
        pytest.skip("set OMNISYNC_OPENAPI_FULL to OpenAI's full openapi.json to check the vendored subset")
    fresh = tmp_path / "openapi.json"
    script = ROOT / "scripts" / "vendor_openapi.py"
    done = subprocess.run([sys.executable, str(script), full, "--output", str(fresh)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    vendored = ROOT / "tests" / "openapi_spec" / "openapi.json"
    assert fresh.read_bytes() == vendored.read_bytes(), "tests/openapi_spec/openapi.json is stale: rerun scripts/vendor_openapi.py"


def test_the_pythons_ci_runs_are_the_ones_the_metadata_claims():
    import configparser
    import re

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    claimed = re.findall(r"Programming Language :: Python :: (3\.\d+)$", config["metadata"]["classifiers"], re.M)
    noxfile = (ROOT / "noxfile.py").read_text()
    tested = re.search(r"^PYTHONS = (\[.*?\])", noxfile, re.M)
    assert tested and json.loads(tested.group(1)) == claimed == ["3.10", "3.11", "3.12", "3.13"]
    # the tests session runs all but the lowest, which the lowest session runs whole
    assert "LOWEST_PYTHON = PYTHONS[0]" in noxfile and "@nox.session(python=LOWEST_PYTHON)\ndef lowest(" in noxfile
    assert config["options"]["python_requires"] == f">={claimed[0]}"


def test_the_readme_opens_with_the_two_commands_ci_runs_and_the_skip_hint_it_gives():
    readme = (ROOT / "README.md").read_text().splitlines()
    assert readme[0].startswith("python3 -m venv .venv && ") and "examples/remember.py" in readme[0]
    assert readme[1].startswith("python3 -m venv .venv && ") and readme[1].endswith("&& nox")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "readme_command 1" in ci and "readme_command 2" in ci
    from helpers import backends

    assert backends.START_HINT.split(": ", 1)[1] in "\n".join(readme)


def test_the_wheel_ships_the_page_of_omnisync_serve(tmp_path):
    """The page's files are package data, not modules: setup.cfg must name them, or `omnisync serve` answers / with an error."""
    if not (ROOT / "setup.cfg").exists() or not (ROOT / "omnisync").is_dir():
        pytest.skip("needs the source tree (nox runs the suite from a copy without it)")
    import shutil
    import zipfile

    source = tmp_path / "source"  # a copy, so no build/ left by an earlier build fills the wheel
    shutil.copytree(ROOT / "omnisync", source / "omnisync", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("omnisync-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    static = sorted(path.name for path in (ROOT / "omnisync" / "serve" / "static").iterdir())
    assert static == ["index.html", "page.css", "page.js"]
    assert {f"omnisync/serve/static/{name}" for name in static} <= names
    assert {"omnisync/serve/page.py", "omnisync/serve/openapi.py", "omnisync/py.typed", "omnisync/aio.py"} <= names


def test_the_sdist_holds_the_examples_and_the_metadata_names_project_urls(tmp_path):
    """MANIFEST.in brings examples/ into the sdist; setup.cfg's project_urls reach its PKG-INFO."""
    if not (ROOT / "setup.cfg").exists() or not (ROOT / "omnisync").is_dir():
        pytest.skip("needs the source tree (nox runs the suite from a copy without it)")
    import shutil
    import tarfile

    source = tmp_path / "source"
    for name in ("omnisync", "examples"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.db*"))
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(source)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (sdist,) = tmp_path.glob("omnisync-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        (pkg_info,) = [member for member in archive.getmembers() if member.name.count("/") == 1 and member.name.endswith("/PKG-INFO")]
        metadata = archive.extractfile(pkg_info).read().decode()  # type: ignore[union-attr]
    examples = sorted(f"examples/{path.name}" for path in (ROOT / "examples").glob("*.py"))
    assert examples and set(examples) <= names, sorted(set(examples) - names)
    assert "Project-URL: Documentation, README.md" in metadata and "README.md" in names


def test_the_installed_package_holds_the_page_files():
    """Against the installed wheel under nox, this is the wheel's contents; from a checkout, the source's."""
    from omnisync.serve.page import FILES

    for name in FILES:
        assert (PACKAGE_DIR / "serve" / "static" / name).read_bytes(), name


HEAVY_MODULES = ("requests", "urllib3", "tenacity", "sqlalchemy", "redis", "pymongo", "psycopg")


def _modules_loaded_by(code: str) -> list[str]:
    """Which of HEAVY_MODULES a fresh interpreter has loaded after running ``code``."""
    probe = f"{code}\nimport sys\nprint('loaded:', *(name for name in {HEAVY_MODULES!r} if name in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit("loaded:", 1)[1].split()


def test_import_omnisync_loads_no_http_client_retry_library_or_driver():
    assert _modules_loaded_by("import omnisync; omnisync.__all__; omnisync.__version__") == []


def test_the_run_loop_loads_no_http_client():
    assert _modules_loaded_by("import omnisync.runner, omnisync.run_events, omnisync.model.completion") == []


def test_the_version_command_loads_no_http_client_or_driver():
    code = "import sys; sys.argv = ['omnisync', '--version']\nfrom omnisync.cli.main import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    assert _modules_loaded_by(code) == []


def test_the_version_command_loads_no_store_router_or_run_record():
    """What the commands need (the router, the store registry, run records) waits for a command: --version
    answers after omnisync, argparse and the package metadata (issue 23: under 100 ms over a bare start)."""
    code = "import sys; sys.argv = ['omnisync', '--version']\nfrom omnisync.cli.main import main\nmain()\nprint('loaded:', *sorted(m for m in sys.modules if m.startswith('omnisync.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.rsplit("loaded:", 1)[1].split()
    assert [name for name in loaded if name.startswith(("omnisync.router", "omnisync.stores", "omnisync.run_record", "omnisync.storable", "omnisync.cli.connect", "omnisync.cli.reading"))] == []


def test_every_public_name_resolves_to_its_module_s_object():
    fresh = subprocess.run(
        [sys.executable, "-c", "import omnisync; print(sorted(n for n in omnisync.__all__ if getattr(omnisync, n) is None))"],
        capture_output=True, text=True, timeout=60,
    )
    assert fresh.returncode == 0 and fresh.stdout.strip() == "[]", fresh.stdout + fresh.stderr
    for name, module in omnisync._HOMES.items():
        assert getattr(omnisync, name) is getattr(importlib.import_module(f"omnisync.{module}"), name), name
    assert sorted(omnisync.__all__) == omnisync.__all__ and set(omnisync.__all__) <= set(dir(omnisync))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        omnisync.Nope  # noqa: B018


@pytest.mark.parametrize("package", ["omnisync", "omnisync.model"])
def test_the_names_type_checkers_see_are_the_public_names(package):
    """A lazy package imports each name under TYPE_CHECKING for type checkers; that block must list _HOMES exactly."""
    import ast

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text())
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    typed = {
        alias.asname: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == module._HOMES and module.__all__ == list(module._HOMES)


def test_omnisync_version_is_the_installed_distribution_s(capsys):
    assert omnisync.__version__ == distribution("omnisync").version
    from omnisync.cli.main import main

    done = subprocess.run([sys.executable, "-m", "omnisync.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == f"omnisync {omnisync.__version__}\n", done.stderr
    assert main(["--version"]) == 0
    fast = capsys.readouterr().out
    with pytest.raises(SystemExit) as parsed:  # --version among other options goes through argparse: the same answer
        main(["--traceback", "--version"])
    assert parsed.value.code == 0 and capsys.readouterr().out == fast == done.stdout
