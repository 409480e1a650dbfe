"""The report writer: wrapping, column widths, alignment, and when colour is used."""

from __future__ import annotations

import io

import pytest

from attndoctor.report.term import GAP, HANG, STACK_INDENT, Console, Table, Text


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
    header = [t.plain.rstrip() for t in table.lines(31)[:2]]
    assert header[0].startswith("sdpa-efficient") and "(flash_attn_3)" in header[1]
    stacked = [t.plain.rstrip() for t in table.lines(30)]
    assert stacked == ["✓", "    flash-attn-3", "      (flash_attn_3): ≥2.8"]


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


def _explain_like_table() -> Table:
    table = Table(stack_head=2)
    table.add_column("backend", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("why", ratio=3)
    table.add_column("smallest fix", ratio=2)
    table.add_row("sdpa-cudnn", "✗ refused",
                  "torch 2.11.0 with cuDNN 9.1.0 on sm90 caps cuDNN attention at head dim 128 (256 on sm90 with "
                  "cuDNN >= 9.10; 192/128 on sm10x with cuDNN >= 9.11); got 192/128  [SDPA-CUDNN-HEAD-DIM-210]",
                  "upgrade cuDNN to 9.10.0 or later (on sm90 only)\nor set hdim = 128")
    table.add_row("sdpa-efficient", "✓ runs", "", "")
    table.add_row("te-flash", "✗ refused", "TransformerEngine 2.3 does not run flash-attn 2 with head_dim_qk 192 "
                  "!= head_dim_v 128  [TE-FUSED-HD256-BWD-HOPPER-RUNTIME]",
                  "upgrade TransformerEngine to 2.17.0 or later (pip install "
                  "'transformer-engine[pytorch]>=2.17.0')")
    return table


TOKENS = ("[SDPA-CUDNN-HEAD-DIM-210]", "[TE-FUSED-HD256-BWD-HOPPER-RUNTIME]", "'transformer-engine[pytorch]>=2.17.0')")


@pytest.mark.parametrize("width", [140, 100, 80, 60, 50, 40])
def test_table_fits_the_width_and_never_splits_a_token_that_fits(width: int) -> None:
    lines = [t.plain.rstrip() for t in _explain_like_table().lines(width)]
    assert max(len(line) for line in lines) <= width
    words = {word for line in lines for word in line.split()}
    for token in TOKENS:
        if len(token) <= width - STACK_INDENT - HANG:
            assert token in words, (token, lines)


def test_a_narrow_table_stacks_each_row_under_its_head() -> None:
    lines = [t.plain.rstrip() for t in _explain_like_table().lines(60)]
    assert lines[0].split() == ["sdpa-cudnn", "✗", "refused"]
    assert lines[1].startswith("    why: torch 2.11.0")
    fix = next(i for i, line in enumerate(lines) if "smallest fix:" in line)
    assert lines[fix].startswith("    smallest fix: upgrade cuDNN") and "      or set hdim = 128" in lines
    assert "sdpa-efficient   ✓ runs" in lines and not any(line.startswith("─") for line in lines)


def test_only_a_token_wider_than_the_room_is_cut() -> None:
    table = Table()
    table.add_column("name", no_wrap=True)
    table.add_column("path")
    table.add_row("x", "see /" + "a" * 60 + " for details")
    lines = [t.plain.rstrip() for t in table.lines(40)]
    assert max(len(line) for line in lines) <= 40 and "details" in lines[-1]


@pytest.mark.parametrize(("stream", "columns", "width"), [
    (io.StringIO, "60", 60),
    (_Tty, "60", 60),
    (io.StringIO, None, 140),
    (io.StringIO, "", 140),
    (io.StringIO, "wide", 140),
    (io.StringIO, "10", 40),
])
def test_console_width_follows_columns_even_off_a_terminal(monkeypatch: pytest.MonkeyPatch, stream: type,
                                                           columns: str | None, width: int) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
    assert Console(stream()).width == width


def test_a_column_held_at_its_longest_word_does_not_push_the_table_wider() -> None:
    table = Table()
    table.add_column("a", ratio=3)
    table.add_column("b", ratio=1)
    table.add_row("word " * 30, "short " * 3 + "x" * 30 + " tail")
    widths = table.widths(80)
    assert widths[1] == 30 and sum(widths) + len(GAP) == 80
