from hypothesis import given, settings
from hypothesis import strategies as st

from omnisync.model.sse import Event, EventParser, iter_events

LINE_ENDS = ("\n", "\r", "\r\n")
value_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)


def parse(*pieces: bytes) -> list[Event]:
    return list(iter_events(pieces))


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


def test_data_lines_are_joined_and_one_leading_space_dropped():
    assert parse(b"data: a\ndata:  b\ndata:c\n\n") == [Event("a\n b\nc")]


def test_event_name_and_id_are_kept():
    assert parse(b"event: error\nid: 7\ndata: {}\n\n") == [Event("{}", "error", "7")]


def test_comments_and_keep_alives_are_skipped():
    assert parse(b": keep-alive\n\n:\ndata: x\n: ping\n\n") == [Event("x")]


def test_an_event_without_data_is_not_dispatched():
    assert parse(b"event: ping\n\nretry: 100\n\ndata: x\n\n") == [Event("x")]


def test_an_event_cut_off_by_the_end_is_dropped_and_reported_pending():
    parser = EventParser()
    events = list(iter_events([b'data: {"a":1}\n\ndata: {"b":'], parser))
    assert events == [Event('{"a":1}')] and parser.pending


def test_a_complete_line_without_its_blank_line_is_still_pending():
    parser = EventParser()
    assert list(iter_events([b"data: [DONE]\n"], parser)) == [] and parser.pending


def test_a_finished_stream_leaves_nothing_pending():
    parser = EventParser()
    list(iter_events([b"data: a\r\n\r\n"], parser))
    assert not parser.pending


def test_cr_and_lf_split_across_pieces_make_one_line_end():
    assert parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n", b"\r\n") == [Event("a"), Event("b")]


def test_a_lone_cr_then_a_blank_lf_line_is_one_line_end_not_two():
    # "\r" then "\n" in the next piece is CRLF: no blank line, so no event yet
    assert parse(b"data: a\r", b"\n") == []


def test_mixed_line_ends_end_events():
    assert parse(b"data: a\n\r\ndata: b\r\rdata: c\r\n\n") == [Event("a"), Event("b"), Event("c")]


def test_a_byte_order_mark_at_the_start_is_skipped_even_when_split():
    assert parse(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [Event("x")]


def test_utf8_split_inside_a_character():
    encoded = "data: héllo ✓\n\n".encode()
    assert parse(*[encoded[i : i + 1] for i in range(len(encoded))]) == [Event("héllo ✓")]


@st.composite
def streams(draw):
    """A stream written with random line ends, the events it holds, and where to cut it."""
    events, lines = [], []
    for _ in range(draw(st.integers(0, 5))):
        lines.extend((":" + draw(value_text)) for _ in range(draw(st.integers(0, 2))))
        name = draw(st.one_of(st.none(), st.sampled_from(["message", "error", "delta"])))
        if name:
            lines.append(f"event: {name}")
        data = draw(st.lists(value_text, min_size=1, max_size=3))
        lines.extend(f"data: {value}" for value in data)
        lines.append("")
        events.append(Event("\n".join(data), name or "message"))
    text = ""
    for line in lines:
        end = draw(st.sampled_from(LINE_ENDS))
        if line == "" and text.endswith("\r"):
            end = "\r"  # after a lone CR, a blank line ending in LF would read as CRLF
        text += line + end
    encoded = text.encode()
    return encoded, events, draw(st.lists(st.integers(0, max(len(encoded), 1)), max_size=12))


@settings(max_examples=300, deadline=None)
@given(streams())
def test_any_split_of_any_stream_gives_the_same_events(case):
    encoded, events, cuts = case
    parser = EventParser()
    assert list(iter_events(split_at(encoded, cuts), parser)) == events
    assert not parser.pending
