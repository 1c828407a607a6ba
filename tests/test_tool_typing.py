"""``@register_tool()`` hands back the function with its own type, as mypy --strict sees it."""

import os
import textwrap

import pytest

SNIPPET = textwrap.dedent(
    """
    from omnisync import ToolRegistry

    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def add(x: int, y: int = 0, *, label: str = "") -> int:
        return x + y

    reveal_type(add)
    total: int = add(2, y=3, label="sum")
    add("2", "3")
    """
)


def test_register_tool_keeps_the_functions_type(tmp_path):
    try:
        from mypy import api
    except ImportError:
        reason = "mypy is not installed"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    source = tmp_path / "uses_a_tool.py"
    source.write_text(SNIPPET)
    stdout, stderr, status = api.run(["--strict", "--config-file", "", "--cache-dir", str(tmp_path / "cache"), str(source)])
    lines = [line.split(": ", 1)[1].replace("builtins.", "") for line in stdout.splitlines() if line.startswith(str(source))]
    assert 'note: Revealed type is "def (x: int, y: int =, *, label: str =) -> int"' in lines, stdout
    assert [line for line in lines if line.startswith("error:")] == [
        'error: Argument 1 to "add" has incompatible type "str"; expected "int"  [arg-type]',
        'error: Argument 2 to "add" has incompatible type "str"; expected "int"  [arg-type]',
    ], stdout
    assert status == 1 and not stderr
