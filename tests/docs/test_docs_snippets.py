"""Every fenced Python block of README.md and docs/*.md runs, against the scripted model.

The conventions (CONTRIBUTING.md, "Snippets in the docs"):

- The blocks of one page run in order in one Python process, sharing their names as a
  notebook does, in an empty temporary directory (holding only ``chart.png``, a small PNG),
  with ``OPENAI_BASE_URL`` pointing at cassettes/scripted_model.py, no store variables set,
  and the keys the endpoint recipes read set to stand-ins.
- A block that shows its output is followed by ``<!-- snippet: output -->`` and a ```text
  block: what the block printed must be exactly that text.
- A block that cannot run has ``<!-- snippet: skip because REASON -->`` right before it; the
  skips are counted and kept few (MOST_SKIPS).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.serve_servers import scripted_model_server

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MOST_SKIPS = 6

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
SKIP = re.compile(r"<!-- snippet: skip because (.+?) -->\s*\Z", re.S)
OUTPUT_MARK = "<!-- snippet: output -->"
ONE_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
STAND_IN_KEYS = {"AZURE_OPENAI_API_KEY": "azure-key-stand-in", "OPENROUTER_API_KEY": "openrouter-key-stand-in", "VLLM_API_KEY": "vllm-key-stand-in"}


@dataclass
class Snippet:
    page: str
    line: int
    code: str
    skip_reason: str | None = None
    shown_output: str | None = None


def snippets(path: Path, root: Path = ROOT) -> list[Snippet]:
    """The page's Python blocks, each with its skip reason or shown output, if any."""
    text = path.read_text(encoding="utf-8")
    page = str(path.relative_to(root))
    found: list[Snippet] = []
    fences = list(FENCE.finditer(text))
    for index, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        before = text[fences[index - 1].end() if index else 0 : fence.start()]
        skipped = SKIP.search(before)
        snippet = Snippet(page, text.count("\n", 0, fence.start()) + 1, fence.group(2), skipped.group(1).strip() if skipped else None)
        following = fences[index + 1] if index + 1 < len(fences) else None
        if following and following.group(1) == "text" and text[fence.end() : following.start()].strip() == OUTPUT_MARK:
            snippet.shown_output = following.group(2)
        found.append(snippet)
    return found


RUNNER = """
import contextlib, io, json, sys, traceback
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
printed = []
for block in blocks:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block["code"], block["where"], "exec"), namespace)
    except BaseException:
        print(f"{block['where']} raised:", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    printed.append(out.getvalue())
json.dump(printed, open(sys.argv[2], "w"))
"""


def snippet_environment(model_url: str) -> dict[str, str]:
    dropped = ("OPENAI_", "OMNISYNC_", "DATABASE_URL", "REDIS_", "MONGODB_")
    environment = {name: value for name, value in os.environ.items() if not name.startswith(dropped)}
    return {**environment, **STAND_IN_KEYS, "OPENAI_BASE_URL": model_url}


def run_page(page_snippets: list[Snippet], workdir: Path) -> list[str]:
    """Run the blocks in order in one process; what each printed."""
    (workdir / "chart.png").write_bytes(ONE_PIXEL_PNG)
    blocks = [{"code": s.code, "where": f"{s.page}:{s.line}"} for s in page_snippets]
    (workdir / ".blocks.json").write_text(json.dumps(blocks))
    with scripted_model_server() as model_url:
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, ".blocks.json", ".printed.json"],
            cwd=workdir, env=snippet_environment(model_url), capture_output=True, text=True, timeout=120,
        )
    assert done.returncode == 0, done.stderr
    printed: list[str] = json.loads((workdir / ".printed.json").read_text())
    return printed


def mismatches(page_snippets: list[Snippet], printed: list[str]) -> list[str]:
    """Each block whose printed output differs from the output its page shows."""
    return [
        f"{snippet.page}:{snippet.line} printed {out!r}, the page shows {snippet.shown_output!r}"
        for snippet, out in zip(page_snippets, printed)
        if snippet.shown_output is not None and out.rstrip() != snippet.shown_output.rstrip()
    ]


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_python_block_of_the_page_runs_and_prints_what_it_shows(path, tmp_path):
    runnable = [s for s in snippets(path) if s.skip_reason is None]
    if runnable:
        assert mismatches(runnable, run_page(runnable, tmp_path)) == []


def test_the_pages_skip_few_blocks_and_say_why():
    skipped = [s for path in PAGES for s in snippets(path) if s.skip_reason is not None]
    assert len(skipped) <= MOST_SKIPS, [f"{s.page}:{s.line}: {s.skip_reason}" for s in skipped]
    assert sum(len(snippets(path)) for path in PAGES) >= 3 * len(skipped)


def test_the_collector_reads_skips_and_shown_output(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- snippet: skip because it needs a Redis server -->\n```python\nimport redis\n```\n\n"
        "```python\nprint(2 + 2)\n```\n\n<!-- snippet: output -->\n```text\n4\n```\n\n```console\n$ ls\n```\n"
    )
    found = snippets(page, tmp_path)
    assert [(s.line, s.skip_reason, s.shown_output) for s in found] == [(2, "it needs a Redis server", None), (6, None, "4\n")]


def test_a_block_that_prints_something_else_than_it_shows_is_reported(tmp_path):
    shown = Snippet("page.md", 1, "print('five')\n", shown_output="4\n")
    assert mismatches([shown], run_page([shown], tmp_path)) == ["page.md:1 printed 'five\\n', the page shows '4\\n'"]


def test_a_block_that_raises_fails_naming_its_page_and_line(tmp_path):
    with pytest.raises(AssertionError, match=r"page.md:7 raised"):
        run_page([Snippet("page.md", 7, "1 / 0\n")], tmp_path)
