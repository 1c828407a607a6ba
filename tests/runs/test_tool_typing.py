"""What a user's mypy --strict sees: ``@register_tool()`` keeps the function's type, and omnisync.aio's
coroutine methods return the typed results."""

import os
import re
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


AIO_SNIPPET = textwrap.dedent(
    """
    import asyncio

    from omnisync import aio
    from omnisync.content import ImageURL


    async def main() -> None:
        async with aio.MemoryRouter("in_memory") as router:
            agent = aio.OmniCoreAgent("a", "Be brief.", {"model": "m"}, memory_router=router)
            result = await agent.run("hi", session_id="s")
            reveal_type(agent.run)
            reveal_type(result["response"])
            reveal_type(result["status"])
            reveal_type(agent.memory_router)
            reveal_type((await agent.preview("s"))["total_tokens"])
            history = await agent.get_session_history("s")
            reveal_type(history[0]["role"])
            result["steps"] + "one"
            await agent.run(42)
            image: ImageURL = {"url": "https://example.com/cat.png", "detail": "low"}
            await agent.run([{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": image}], session_id="s")
            content = history[0]["content"]
            if isinstance(content, list) and content[0]["type"] == "image_url":
                reveal_type(content[0]["image_url"]["url"])
            await agent.run([{"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "medium"}}])


    asyncio.run(main())
    """
)


def mypy_strict(tmp_path, name, snippet):
    """mypy --strict's messages on ``snippet``, each without its file and line, and its exit status."""
    try:
        from mypy import api
    except ImportError:
        reason = "mypy is not installed"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    source = tmp_path / f"{name}.py"
    source.write_text(snippet)
    stdout, stderr, status = api.run(["--strict", "--config-file", "", "--cache-dir", str(tmp_path / "cache"), str(source)])
    assert not stderr
    lines = [newer_form(line.split(": ", 1)[1]) for line in stdout.splitlines() if line.startswith(str(source))]
    return lines, status, stdout


def newer_form(text):
    """A message as current mypy words it: older ones write ``builtins.str`` and ``TypedDict('name', ...)``."""
    return pep604(re.sub(r"TypedDict\('([\w.]+)'", r"TypedDict(\1", text.replace("builtins.", "")))


def pep604(text):
    """Older mypy writes ``Union[a, b]`` where newer writes ``a | b``: compare in the newer form
    (nested unions too, and members holding brackets, braces or quoted commas)."""
    while (start := text.find("Union[")) != -1:
        depth, members, begun, index, quote = 0, [], start + len("Union["), start + len("Union["), ""
        while True:
            char = text[index]
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char in "([{":
                depth += 1
            elif char in ")]}" and depth:
                depth -= 1
            elif char == "]":
                members.append(text[begun:index])
                break
            elif char == "," and depth == 0:
                members.append(text[begun:index])
                begun = index + 2  # past ", "
            index += 1
        text = text[:start] + " | ".join(members) + text[index + 1 :]
    return text


def test_register_tool_keeps_the_functions_type(tmp_path):
    lines, status, stdout = mypy_strict(tmp_path, "uses_a_tool", SNIPPET)
    assert 'note: Revealed type is "def (x: int, y: int =, *, label: str =) -> int"' in lines, stdout
    assert [line for line in lines if line.startswith("error:")] == [
        'error: Argument 1 to "add" has incompatible type "str"; expected "int"  [arg-type]',
        'error: Argument 2 to "add" has incompatible type "str"; expected "int"  [arg-type]',
    ], stdout
    assert status == 1


def test_aio_methods_are_coroutines_that_return_typed_results(tmp_path):
    lines, status, stdout = mypy_strict(tmp_path, "uses_aio", AIO_SNIPPET)
    notes = [line for line in lines if line.startswith("note: Revealed type")]
    run, others = notes[0], notes[1:]
    assert run.startswith('note: Revealed type is "def (message: str | '), stdout
    assert "Sequence[TypedDict(omnisync.content.TextPart, {" in run, stdout  # or any other part; see omnisync.content
    assert "})] | None, session_id: str | None =, on_busy: str =, output_type: Any =, extra_body: typing.Mapping[str, Any] | None =) -> " in run, stdout  # None: continue the session
    assert "Coroutine[Any, Any, TypedDict(omnisync.results.RunResult, {'response': str | None" in run, stdout
    assert others == [
        'note: Revealed type is "str | None"',
        "note: Revealed type is \"Literal['running'] | Literal['awaiting_approval'] | Literal['awaiting_budget'] | "
        "Literal['completed'] | Literal['failed'] | Literal['cancelled']\"",
        'note: Revealed type is "omnisync.aio.MemoryRouter"',
        'note: Revealed type is "int"',
        "note: Revealed type is \"Literal['system'] | Literal['user'] | Literal['assistant'] | Literal['tool']\"",
        'note: Revealed type is "str"',  # an image part's URL, once the content is narrowed to parts
    ], stdout
    errors = [line for line in lines if line.startswith("error:")]
    assert errors[:2] == [
        'error: Unsupported operand types for + ("int" and "str")  [operator]',
        'error: Argument 1 to "run" of "OmniCoreAgent" has incompatible type "int"; '
        'expected "str | Sequence[TextPart | ImagePart | AudioPart | FilePart] | None"  [arg-type]',
    ], stdout
    assert len(errors) == 3 and "Literal['medium']" in errors[2] and '"detail"' in errors[2], stdout
    assert status == 1
