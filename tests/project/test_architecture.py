"""ARCHITECTURE.md names every module of the package, so a newcomer finds each one's home there."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_is_named_in_the_architecture_page():
    page = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    package = ROOT / "omnisync"
    if not package.is_dir():  # the suite runs from a copy beside an installed wheel
        import omnisync

        package = Path(omnisync.__file__).parent
    missing = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.name == "__init__.py" or relative.name == "__main__.py":
            continue
        named = (relative.name in page) or (str(relative) in page)
        if not named:
            missing.append(str(relative))
    assert missing == [], f"ARCHITECTURE.md does not name: {missing}"


def test_the_path_of_a_run_and_the_layers_read_in_three_minutes():
    page = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    opening = page[page.index("## The path of one run") : page.index("## Every module")]
    assert len(opening.split()) <= 500  # the page promises about 420 words, three minutes at a slow reading pace
