"""A user message of content parts: checked before anything happens, sent and stored exactly as given
on every backend, counted by OpenAI's image rule, and named without its data by the CLI and summaries."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import typing
import uuid
import zlib
from functools import lru_cache

import pytest

import omnisync
from helpers.agent_helpers import echo, make_agent
from helpers.backend_routers import BACKENDS, open_router
from helpers.fake_http import completion, install
from omnisync import MemoryRouter, OmniCoreAgent, aio
from omnisync.cli.main import main as cli_main
from omnisync.content import check_content, describe
from omnisync.errors import ConfigurationError
from omnisync.errors import TransferError
from omnisync.image_size import image_size
from omnisync.messages import Message
from omnisync.tokens import estimate_tokens, message_tokens, tile_tokens
from omnisync.transfer import export_jsonl, import_export, read_export
from helpers.store_contract import content_parts
from test_result_types import problems


@lru_cache(maxsize=None)
def png(width: int, height: int) -> bytes:
    """A valid PNG of ``width`` x ``height`` black pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x00" * 3 * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def jpeg_header(width: int, height: int) -> bytes:
    """The start of a baseline JPEG: SOI, an APP0 (JFIF) segment, then the frame that holds the size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app0 + sof0


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_part(url: str, detail: str | None = None) -> dict:
    return {"type": "image_url", "image_url": {"url": url, **({"detail": detail} if detail else {})}}


QUESTION = {"type": "text", "text": "What is in this picture?"}


@pytest.fixture
def name():
    return f"parts-{uuid.uuid4().hex[:10]}"


# --- checked before anything happens -------------------------------------------------------

REFUSED = [
    (42, "message must be a string or a list of content parts"),
    ([], "empty list"),
    (["just text"], r"message\[0\] must be a dict"),
    ([{"type": "image", "image_url": {"url": "https://example.com/a.png"}}], "type 'image'; a user message's parts are of type 'text', 'image_url'"),
    ([{"type": ["text"], "text": "hi"}], r"type \['text'\]; a user message's parts"),
    ([{"type": "text", "content": "hi"}], "unknown key 'content'; it takes 'type', 'text' or 'prompt_cache_breakpoint'"),
    ([{"type": "text", "text": ""}], r'message\[0\]\["text"\] must be a non-empty string'),
    ([{"type": "image_url", "image_url": "https://example.com/a.png"}], "needs 'image_url' as an object"),
    ([image_part("/home/me/cat.png")], "must be an http.s. URL or a data:image/...;base64, URL.*read it and encode it"),
    ([image_part("data:text/plain;base64,aGk=")], "not one of an image: write it as data:image/png;base64"),
    ([image_part("data:image/png;base64,not base64!")], "is not valid base64"),
    ([image_part("https://example.com/a.png", "medium")], "'medium'; use 'auto', 'low' or 'high'"),
    ([{"type": "image_url", "image_url": {"url": "https://example.com/a.png", "size": 3}}], "unknown key 'size'"),
    ([{"type": "input_audio", "input_audio": {"data": "data:audio/wav;base64,UklGRg==", "format": "wav"}}], "give the base64 data alone"),
    ([{"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "ogg"}}], r"\"format\"\] must be 'wav' or 'mp3'"),
    ([{"type": "file", "file": {"filename": "a.pdf"}}], "needs file_data .with a filename. or file_id"),
    ([{"type": "text", "text": "a\x00b"}], "NUL character or a lone surrogate"),
    ([QUESTION, {"type": "text", "text": "x", "prompt_cache_breakpoint": {"mode": "sometimes"}}], r'message\[1\]\["prompt_cache_breakpoint"\]'),
]


@pytest.mark.parametrize(("message", "says"), REFUSED)
def test_a_bad_message_is_refused_before_anything_is_stored_or_sent(monkeypatch, name, message, says):
    adapter = install(monkeypatch, echo)
    with make_agent(name) as agent:
        with pytest.raises(ConfigurationError, match=says):
            agent.run(message, session_id="s")
        with pytest.raises(ConfigurationError, match=says):
            agent.stream(message, session_id="s")
        with pytest.raises(ConfigurationError, match=says):
            agent.preview("s", message)
        assert adapter.sent == [] and agent.memory_router.store.sessions(name) == [] and agent.list_runs() == []


def test_a_message_too_large_for_a_store_is_refused():
    big = base64.b64encode(b"\x00" * (3 * 1024 * 1024 + 3)).decode()
    with pytest.raises(ConfigurationError, match="at most 4194304 bytes .send large images and files by URL or file_id"):
        check_content([image_part(f"data:image/png;base64,{big}")])


def test_parts_are_copied_and_every_kind_the_description_allows_is_taken():
    parts = content_parts() + [{"type": "text", "text": "end", "prompt_cache_breakpoint": {"mode": "explicit"}}]
    checked = check_content(tuple(parts))
    assert checked == parts and checked is not parts
    parts[0]["text"] = "changed afterwards"
    assert checked[0]["text"] != "changed afterwards"


# --- sent and stored exactly as given ------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


def test_an_image_message_round_trips_through_every_store(router, name, monkeypatch):
    """The request validates against OpenAI's description (fake_http checks every one) and carries the parts
    as given; the next run sends them again from the store; history returns them."""
    adapter = install(monkeypatch, [completion("A black square.", prompt_tokens=100, completion_tokens=4), completion("Black.")])
    parts = [QUESTION, image_part(data_url(png(2048, 4096)), "high"), *content_parts()[2:]]
    agent = make_agent(name, router)
    try:
        first = agent.run(parts, session_id="s")
        second = agent.run("Which colour was it?", session_id="s")
        assert (first["response"], second["response"]) == ("A black square.", "Black.")
        assert adapter.sent[0]["messages"][1] == {"role": "user", "content": parts}
        assert adapter.sent[1]["messages"][1:] == [
            {"role": "user", "content": parts},
            {"role": "assistant", "content": "A black square."},
            {"role": "user", "content": "Which colour was it?"},
        ]
        history = agent.get_session_history("s")
        assert history[0] == {"role": "user", "content": parts}
        assert problems(history, typing.List[omnisync.HistoryMessage]) == []
        assert problems(agent.get_session_history("s", include_inactive=True), typing.List[omnisync.HistoryMessage]) == []
        stored = router.store.history(name, "s")[0]
        text = estimate_tokens(QUESTION["text"])
        assert stored.tokens == 4 + text + 1105 + 765 + 1 + 1000  # message, text, 2048x4096 image, image by URL, audio, a PDF without countable pages
        preview = agent.preview("s", [QUESTION, image_part("https://example.com/b.png", "low")])
        assert preview["tokens"][-1] == 4 + text + 85 and preview["messages"][1]["content"] == parts
    finally:
        agent.clear_session_history()
        agent.cleanup()


def test_a_streamed_run_and_an_aio_run_send_the_parts(monkeypatch, name):
    from helpers import fake_stream

    adapter = fake_stream.install(
        monkeypatch,
        [fake_stream.Streamed(fake_stream.sse([fake_stream.chunk(role="assistant", content="A cat."), fake_stream.chunk(finish_reason="stop")]))],
    )
    parts = [QUESTION, image_part("https://example.com/cat.png")]
    with make_agent(name) as agent:
        with agent.stream(parts, session_id="s") as stream:
            list(stream)
        assert stream.result["response"] == "A cat."
        assert adapter.sent[0]["messages"][1]["content"] == parts
        assert agent.get_session_history("s")[0]["content"] == parts

    install(monkeypatch, echo)

    async def main() -> list:
        async with aio.MemoryRouter("in_memory") as router:
            agent = aio.OmniCoreAgent(name, "Be brief.", {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, memory_router=router)
            await agent.run(parts, session_id="s")
            return await agent.get_session_history("s")

    assert asyncio.run(main())[0]["content"] == parts


def test_an_export_keeps_the_parts_and_an_import_checks_them(tmp_path, name):
    source, target = MemoryRouter("in_memory"), MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'copy.db'}")
    source.store.append(name, "s", [Message(role="user", content=content_parts())])
    export_jsonl(source.store, tmp_path / "out.jsonl")
    import_export(target.store, read_export(tmp_path / "out.jsonl"))
    assert target.store.history(name, "s")[0].content == content_parts()
    broken = (tmp_path / "out.jsonl").read_text().replace('"detail":"low"', '"detail":"tiny"')
    (tmp_path / "bad.jsonl").write_text(broken)
    with pytest.raises(TransferError, match="line 1: the content parts are not valid.*'tiny'"):
        read_export(tmp_path / "bad.jsonl")
    target.close()


# --- counted ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (png(3, 2), (3, 2)),
        (jpeg_header(640, 480), (640, 480)),
        (b"GIF89a" + struct.pack("<HH", 300, 200) + b"\x00" * 4, (300, 200)),
        (b"RIFF\x00\x00\x00\x00WEBPVP8X" + b"\x00" * 8 + (799).to_bytes(3, "little") + (599).to_bytes(3, "little"), (800, 600)),
        (b"RIFF\x00\x00\x00\x00WEBPVP8L" + b"\x00" * 5 + ((99) | (49 << 14)).to_bytes(4, "little"), (100, 50)),
        (b"not an image at all", None),
    ],
)
def test_image_sizes_are_read_from_the_header(data, size):
    assert image_size(data) == size


def test_images_are_counted_by_openais_tile_rule():
    assert tile_tokens(1024, 1024) == 765  # OpenAI's worked examples
    assert tile_tokens(2048, 4096) == 1105
    assert tile_tokens(512, 512) == 255 and tile_tokens(513, 100) == 425
    count = len  # a counter that makes text easy to see: one token per character

    def cost(part: dict) -> int:
        return message_tokens(count, {"role": "user", "content": [part]}) - 4

    assert cost(QUESTION) == len(QUESTION["text"])
    assert cost(image_part(data_url(png(2048, 4096)), "low")) == 85
    assert cost(image_part(data_url(png(2048, 4096)), "high")) == 1105
    assert cost(image_part(data_url(png(2048, 4096)))) == 1105  # auto is counted as high
    assert cost(image_part(data_url(jpeg_header(200, 100), "image/jpeg"))) == 255
    assert cost(image_part("https://example.com/unknown.png")) == 765  # a stated estimate: 1024x1024
    wav = b"RIFF" + b"\x00" * 4 + b"WAVEfmt " + b"\x00" * 12 + struct.pack("<I", 32000)  # byte rate: 1 s is 32000 bytes
    wav += b"\x00" * (32000 - len(wav))
    assert cost({"type": "input_audio", "input_audio": {"data": base64.b64encode(wav).decode(), "format": "wav"}}) == 10
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages >>\n2 0 obj << /Type /Page >>\n3 0 obj << /Type/Page >>\n"
    assert cost({"type": "file", "file": {"filename": "a.pdf", "file_data": data_url(pdf, "application/pdf")}}) == 2000
    assert cost({"type": "file", "file": {"file_id": "file-abc"}}) == 1000


# --- named without their data ----------------------------------------------------------------


def test_describe_names_parts_without_their_data():
    image = png(8, 8).ljust(12_345, b"\x00")
    line = describe([QUESTION, image_part(data_url(image)), image_part("https://example.com/cat.png"), *content_parts()[3:]])
    assert line == (
        "What is in this picture? [image: image/png, 12.3 kB] [image: https://example.com/cat.png] "
        "[audio: wav, 12 B] [file: notes.pdf, application/pdf, 9 B]"
    )


def test_the_cli_shows_parts_without_base64(tmp_path, name, capsys):
    image = png(400, 300).ljust(12_345, b"\x00")
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql", url=url) as router:
        router.store.append(name, "s", [Message(role="user", content=[QUESTION, image_part(data_url(image))])])
    assert cli_main(["history", "s", "--url", url, "--agent", name]) == 0
    shown = capsys.readouterr().out
    assert "user  What is in this picture? [image: image/png, 12.3 kB]" in shown
    assert base64.b64encode(image).decode()[:20] not in shown
    assert cli_main(["preview", "s", "--url", url, "--agent", name]) == 0
    shown = capsys.readouterr().out
    assert "[image: image/png" in shown and base64.b64encode(image).decode()[:20] not in shown


def test_history_and_preview_json_elide_base64_unless_full(tmp_path, name, capsys):
    parts = content_parts()
    image, audio, pdf = parts[1]["image_url"]["url"], parts[3]["input_audio"]["data"], parts[4]["file"]["file_data"]
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql", url=url) as router:
        router.store.append(name, "s", [Message(role="user", content=parts), Message(role="assistant", content="a cat")])
    expected = [
        parts[0],
        {"type": "image_url", "image_url": {"url": "[image: image/png, 70 B]", "detail": "low"}},
        parts[2],  # a URL is no data: kept
        {"type": "input_audio", "input_audio": {"data": "[audio: wav, 12 B]", "format": "wav"}},
        {"type": "file", "file": {"filename": "notes.pdf", "file_data": "[file: notes.pdf, application/pdf, 9 B]"}},
    ]
    for command in (["history", "s"], ["preview", "s"]):
        assert cli_main([*command, "--url", url, "--agent", name, "--json"]) == 0
        shown = capsys.readouterr().out
        assert image not in shown and audio not in shown and pdf not in shown
        lines = json.loads(shown)
        contents = [line["message"]["content"] for line in lines] if command[0] == "history" else [m["content"] for m in lines["messages"][1:]]
        assert contents == [expected, "a cat"]
        assert cli_main([*command, "--url", url, "--agent", name, "--json", "--full"]) == 0
        full = json.loads(capsys.readouterr().out)
        contents = [line["message"]["content"] for line in full] if command[0] == "history" else [m["content"] for m in full["messages"][1:]]
        assert contents == [parts, "a cat"]


def test_preview_takes_a_new_message_of_content_parts_as_json(tmp_path, name, capsys):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql", url=url) as router:
        router.store.append(name, "s", [Message(role="user", content="hello"), Message(role="assistant", content="hi")])
    new = [QUESTION, image_part(data_url(png(16, 16)), "low")]
    (tmp_path / "new.json").write_text(json.dumps(new))
    for given in (json.dumps(new), f"@{tmp_path / 'new.json'}"):
        assert cli_main(["preview", "s", "--url", url, "--agent", name, "--message-json", given, "--json", "--full"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["messages"][-1] == {"role": "user", "content": new}
        assert shown["tokens"][-1] > 85  # the image counted by OpenAI's rule, not as its base64 text
    assert cli_main(["preview", "s", "--url", url, "--agent", name, "--message-json", json.dumps(new)]) == 0
    assert "What is in this picture? [image: image/png" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ('[{"type": "image_url", "image_url": {"url": "ftp://x"}}]', "message[0]"),
        ("{not json", "not JSON"),
        ('{"type": "text", "text": "x"}', "list of content parts"),
        ("@/nonexistent/parts.json", "cannot read"),
    ],
)
def test_preview_refuses_a_bad_json_message_with_usage(tmp_path, name, capsys, given, said):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql", url=url) as router:
        router.store.append(name, "s", [Message(role="user", content="hello")])
    with pytest.raises(SystemExit) as exited:
        cli_main(["preview", "s", "--url", url, "--agent", name, "--message-json", given])
    assert exited.value.code == 2 and said in capsys.readouterr().err


def test_message_and_message_json_are_one_or_the_other(capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(["preview", "s", "--agent", "a", "--message", "x", "--message-json", '"y"'])
    assert exited.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_a_summary_keeps_the_text_and_names_the_image(monkeypatch, name):
    def answer(body: dict) -> dict:
        return completion("the gist" if body["messages"][0]["content"].startswith("You write the running summary") else "noted")

    adapter = install(monkeypatch, answer)
    image = data_url(png(32, 32))
    config = {"memory_config": {"mode": "sliding_window", "value": 2, "summary": {"enabled": True}}}
    with make_agent(name, agent_config=config) as agent:
        agent.run([QUESTION, image_part(image)], session_id="s")
        agent.run("And now?", session_id="s")
        agent.get_session_history("s")  # waits for the summary
    summary_call = next(body for body in adapter.sent if body["messages"][0]["content"].startswith("You write the running summary"))
    transcript = summary_call["messages"][1]["content"]
    assert "user: What is in this picture? [image: image/png," in transcript
    assert image.split(",")[1][:20] not in transcript


# --- replayed from a hand-written cassette ----------------------------------------------------


def test_an_image_run_replays_from_a_hand_written_cassette(omnisync_cassette, name):
    """The cassette matches on the body, so each request must carry the parts exactly (the second from the store)."""
    from helpers.tool_agents import SCRIPTED_MODEL

    parts = [QUESTION, image_part(data_url(png(16, 16)), "low"), image_part("https://example.com/cat.png")]
    with OmniCoreAgent("image-agent", "You are a helpful assistant.", SCRIPTED_MODEL) as agent:
        with omnisync_cassette("handwritten/image"):
            first = agent.run(parts, session_id="s")
            second = agent.run("And what else?", session_id="s")
        assert first["response"] == "echo: What is in this picture? [image_url] [image_url]"
        assert second["response"] == "echo: And what else?"
        assert agent.get_session_history("s")[0] == {"role": "user", "content": parts}
