"""What the README, the site's pages and the project files promise about one another."""

from __future__ import annotations

import re
from pathlib import Path

from omnisync.stores.sql.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"


def test_the_readme_is_a_landing_page():
    assert len(README.splitlines()) <= 200


def test_the_pages_that_show_the_two_commands_show_them_as_ci_runs_them():
    first_two = "\n".join(README.splitlines()[:2])  # .ci/run runs these lines
    for shown_in in (DOCS / "getting-started.md", ROOT / "CONTRIBUTING.md"):
        assert f"```console\n{first_two}\n```" in shown_in.read_text(encoding="utf-8"), shown_in


def test_the_readme_links_every_page_of_the_site():
    linked = set(re.findall(r"\]\((docs/[\w/-]+\.md)", README))
    included = {"docs/changelog.md", "docs/security.md", "docs/contributing.md"}  # the top-level files, linked as such
    home = {"docs/index.md"}  # the site's home: the README's own introduction
    pages = {str(page.relative_to(ROOT)) for page in DOCS.rglob("*.md")}
    assert pages - included - home - linked == set()
    assert linked <= pages


def test_the_version_policy_names_the_schema_version_the_code_writes():
    policy = (DOCS / "versioning.md").read_text(encoding="utf-8")
    assert f"today {SCHEMA_VERSION}:" in policy
    older = ", ".join(str(version) for version in range(1, SCHEMA_VERSION - 1)) + f" and {SCHEMA_VERSION - 1}"
    assert f"versions {older})" in policy
    every_older = f'@pytest.mark.parametrize("version", {list(range(1, SCHEMA_VERSION))})\n    def test_an_older_database_is_upgraded_and_keeps_its_data('
    for upgrade_tests in ("test_store_sqlite.py", "test_store_postgres.py"):  # the tests the page names
        assert every_older in (ROOT / "tests" / "stores" / upgrade_tests).read_text(encoding="utf-8"), upgrade_tests


def test_the_site_includes_the_project_files_rather_than_copying_them():
    for page, source in (("changelog", "CHANGELOG.md"), ("security", "SECURITY.md"), ("contributing", "CONTRIBUTING.md")):
        assert (DOCS / f"{page}.md").read_text(encoding="utf-8") == f'--8<-- "{source}"\n'
        assert "](" not in re.sub(r"\]\(https?://", "", (ROOT / source).read_text(encoding="utf-8")), f"{source}: a relative link breaks in the site"


def test_the_readmes_trace_is_the_first_run_of_the_one_the_telemetry_page_prints():
    """The page's trace is compared with what its code prints (tests/docs/test_docs_snippets.py); the README shows its first run."""
    fenced = re.compile(r"```text\n(invoke_agent .*?)```", re.S)
    (shown,) = fenced.findall(README)
    (printed,) = fenced.findall((ROOT / "docs" / "telemetry.md").read_text(encoding="utf-8"))
    assert printed.startswith(shown) and shown.count("invoke_agent") == 1
