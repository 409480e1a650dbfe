"""Every output format is one row of the formats table, and every renderer writes to the stream it is given."""

from __future__ import annotations

import inspect

import pytest

from attndoctor.errors import UsageError
from attndoctor.report import formats

ROWS = [(kind, fmt) for kind, table in formats.FORMATS.items() for fmt, row in table.items() if row.renderer]


@pytest.mark.parametrize(("kind", "fmt"), ROWS)
def test_every_renderer_writes_to_a_stream_and_returns_nothing(kind, fmt):
    render = formats.renderer(kind, fmt)
    params = list(inspect.signature(render).parameters.values())
    stream_at = 2 if kind == "report" else 1
    assert params[stream_at].name in ("stream", "file"), (kind, fmt, [p.name for p in params])
    assert inspect.signature(render).return_annotation in (None, "None")
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), "options a format does not use are ignored"


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_the_streamed_report_formats_have_writers(fmt):
    assert callable(formats.streamed_writer(fmt))


def test_an_unknown_format_names_the_accepted_ones():
    with pytest.raises(UsageError, match="accepted: text, json, jsonl, junit, sarif, github"):
        formats.check("report", "xml")
    assert formats.accepted("why") == ("text", "json")
