"""The report writer: wrapping, column widths, alignment, and when colour is used."""

from __future__ import annotations

import io

import pytest

from attndoctor.report.term import GAP, Console, Table, Text


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_wrap_breaks_between_words_and_cuts_long_words() -> None:
    assert [t.plain for t in Text("upgrade cuDNN to 9.5.0 or later").wrap(12)] == \
        ["upgrade", "cuDNN to", "9.5.0 or", "later"]
    assert [t.plain for t in Text("abcdefghij xy").wrap(4)] == ["abcd", "efgh", "ij", "xy"]
    assert [t.plain for t in Text("one\ntwo three").wrap(20)] == ["one", "two three"]
    assert [t.plain for t in Text("").wrap(5)] == [""]


def test_styles_survive_wrapping() -> None:
    text = Text("if ", style="").append("torch < 2.3", style="yellow").append(": no cuDNN attention")
    lines = text.wrap(14)
    assert [t.plain for t in lines] == ["if torch <", "2.3: no cuDNN", "attention"]
    assert lines[0].render(color=True) == "if \x1b[33mtorch <\x1b[0m"
    assert lines[1].render(color=True) == "\x1b[33m2.3\x1b[0m: no cuDNN"


def test_base_style_applies_to_appended_spans() -> None:
    text = Text("summary: ", style="bold").append("3 confirmed", style="green")
    assert text.render(color=True) == "\x1b[1msummary: \x1b[0m\x1b[1;32m3 confirmed\x1b[0m"


def test_table_keeps_natural_widths_when_it_fits() -> None:
    table = Table()
    table.add_column("backend", no_wrap=True)
    table.add_column("ms", justify="right")
    table.add_row("sdpa-flash", "1.25")
    table.add_row("te-fused", "10.5")
    lines = [t.plain for t in table.lines(80)]
    assert lines[0] == "backend" + " " * 3 + GAP + "  ms"
    assert lines[1] == "─" * (10 + len(GAP) + 4)
    assert lines[2] == "sdpa-flash" + GAP + "1.25"
    assert lines[3] == "te-fused  " + GAP + "10.5"


def test_table_wraps_flexible_columns_by_ratio_to_fit() -> None:
    table = Table()
    table.add_column("backend", no_wrap=True)
    table.add_column("why", ratio=3)
    table.add_column("fix", ratio=2)
    table.add_row("te-fused", "word " * 40, "upgrade " * 20)
    lines = table.lines(80)
    assert all(len(t.plain.rstrip()) <= 80 for t in lines)
    widths = table.widths(80)
    assert widths[0] == len("te-fused") and sum(widths) + 2 * len(GAP) == 80
    assert widths[1] > widths[2]


def test_table_never_cuts_a_short_word_to_fit() -> None:
    table = Table()
    for header in ("sdpa-efficient\n(torch)", "flash-attn-3\n(flash_attn_3)"):
        table.add_column(header, justify="center")
    table.add_row("✓", "≥2.8")
    assert table.widths(10) == [len("sdpa-efficient"), len("(flash_attn_3)")]
    header = [t.plain.rstrip() for t in table.lines(10)[:2]]
    assert header[0].startswith("sdpa-efficient") and "(flash_attn_3)" in header[1]


def test_centred_cells() -> None:
    table = Table()
    table.add_column("verdict", justify="center")
    table.add_row("✓")
    assert table.lines(40)[2].plain == "   ✓"


@pytest.mark.parametrize(("stream", "env", "colour"), [
    (io.StringIO, {}, False),
    (_Tty, {}, True),
    (_Tty, {"NO_COLOR": "1"}, False),
    (_Tty, {"TERM": "dumb"}, False),
    (io.StringIO, {"FORCE_COLOR": "1"}, True),
])
def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch, stream: type, env: dict[str, str],
                                   colour: bool) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = stream()
    Console(out).print(Text("✗ refused", style="red"))
    assert ("\x1b[31m" in out.getvalue()) is colour
    assert "✗ refused" in out.getvalue()


def test_wrapped_lines_hang_under_the_first() -> None:
    out = io.StringIO()
    Console(out).print(Text("  info: " + "word " * 40, style="dim"))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("  info: word") and lines[1].startswith("    word")


def test_console_wraps_long_text_to_the_file_width() -> None:
    out = io.StringIO()
    console = Console(out)
    console.print("x " * 100)
    console.print()
    lines = out.getvalue().split("\n")
    assert max(len(line) for line in lines) <= console.width
    assert lines[-2] == "" and lines[-1] == ""
