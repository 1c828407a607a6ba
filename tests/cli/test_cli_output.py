"""What the commands print, written as rows come: the same text a whole listing gives."""

from __future__ import annotations

import io
import json

import pytest

from omnisync.cli import output


@pytest.mark.parametrize("items", [[], [{"a": 1, "b": [1, 2]}], [{"a": "é"}, {"b": {"c": None}}, 3]])
def test_a_json_array_written_item_by_item_is_what_a_whole_list_gives(items):
    whole, streamed = io.StringIO(), io.StringIO()
    output.print_json(items, whole)
    output.print_json_items(iter(items), streamed)
    assert streamed.getvalue() == whole.getvalue() and json.loads(streamed.getvalue()) == items


def test_a_long_table_is_printed_in_chunks_each_aligned_to_the_widest_cell_so_far(monkeypatch):
    monkeypatch.setattr(output, "TABLE_CHUNK", 3)
    printed = io.StringIO()
    output.table(("ID", "NAME"), iter([("1", "a"), ("22", "b"), ("333333", "c"), ("4", "d"), ("5", "e")]), printed)
    lines = printed.getvalue().splitlines()
    assert lines == ["ID  NAME", "1   a", "22  b", "333333  c", "4       d", "5       e"]
