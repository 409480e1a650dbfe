"""Terminal text for the reports: styled spans, tables that wrap, colour only on a terminal and never with NO_COLOR.

The reports print through this small writer rather than rich's Console and Table: importing and laying out those
costs about 45 ms, more than half of the start-up budget of `attndoctor explain`. rich still draws the progress bars
of the long GPU commands.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Sequence, Union

from ..console.output import shown

SGR = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "red": "31", "green": "32", "yellow": "33",
       "blue": "34", "magenta": "35", "cyan": "36"}
"""Style words and their ANSI select-graphic-rendition codes; a style is words joined by spaces ("bold red")."""

GAP = "   "
"""Between two table columns (rich's SIMPLE_HEAD look: one space of padding either side of an invisible rule)."""

MIN_WRAP = 12
"""A wrapping column is never narrower than MIN_WRAP, nor than its longest word (see Table)."""

HANG = 2
"""How much further than its first line a printed line that wraps is indented."""

FILE_WIDTH = 140
"""Line width when the output is not a terminal and COLUMNS is not set: wide enough for a file or a CI log."""

MIN_WIDTH = 40
"""No report is laid out narrower than this, whatever COLUMNS or the terminal says."""

STACK_INDENT = 4
"""How far the cells of a stacked table row are indented under the row's head."""


def _join(base: str, style: str) -> str:
    return f"{base} {style}".strip() if base and style else base or style


class Text:
    """A line or lines of text made of spans, each with a style; `style` applies to every span. What goes in is
    shown with its controls escaped (names, paths and messages come from users and libraries); only the styles
    become escape sequences."""

    __slots__ = ("spans", "style")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.spans: list[tuple[str, str]] = [(shown(text), "")] if text else []
        self.style = style

    def append(self, text: str, style: str = "") -> "Text":
        if text:
            self.spans.append((shown(text), style))
        return self

    def append_text(self, other: "Text") -> "Text":
        self.spans.extend((text, _join(other.style, style)) for text, style in other.spans)
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)

    def __str__(self) -> str:
        return self.plain

    def _slice(self, start: int, end: int) -> "Text":
        out = Text(style=self.style)
        pos = 0
        for text, style in self.spans:
            lo, hi = max(start, pos), min(end, pos + len(text))
            if lo < hi:
                out.spans.append((text[lo - pos:hi - pos], style))
            pos += len(text)
        return out

    def split_lines(self) -> list["Text"]:
        """One Text per line of the plain text."""
        plain, out, start = self.plain, [], 0
        while True:
            end = plain.find("\n", start)
            if end < 0:
                out.append(self._slice(start, len(plain)))
                return out
            out.append(self._slice(start, end))
            start = end + 1

    def wrap(self, width: int, indent: int = 0) -> list["Text"]:
        """Lines no wider than `width`, broken between words (a longer word is cut); the lines a long line wraps
        onto start with `indent` spaces."""
        out: list[Text] = []
        width = max(1, width)
        indent = min(indent, width // 2)
        for line in self.split_lines():
            for i, (a, b) in enumerate(_wrap_offsets(line.plain, width, width - indent)):
                out.append(Text(" " * indent).append_text(line._slice(a, b)) if i and indent else line._slice(a, b))
        return out

    def render(self, color: bool, pad_to: int = 0) -> str:
        text = "".join(_styled(t, _join(self.style, s)) for t, s in self.spans) if color else self.plain
        return text + " " * (pad_to - len(self.plain)) if pad_to > len(self.plain) else text


def _styled(text: str, style: str) -> str:
    codes = ";".join(SGR[word] for word in style.split() if word in SGR)
    return f"\x1b[{codes}m{text}\x1b[0m" if codes else text


def _wrap_offsets(text: str, first: int, rest: int) -> list[tuple[int, int]]:
    """(start, end) of each wrapped line of one line of text, the first `first` wide and the others `rest`; spaces
    at a break are dropped."""
    if len(text) <= first:
        return [(0, len(text))]
    lines: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        width = rest if lines else first
        if n - start <= width:
            lines.append((start, n))
            break
        cut = text.rfind(" ", start, start + width + 1)
        if cut <= start:
            end = next_start = start + width
        else:
            end = cut
            while end > start and text[end - 1] == " ":
                end -= 1
            next_start = cut
        lines.append((start, end))
        while next_start < n and text[next_start] == " ":
            next_start += 1
        start = next_start
    return lines or [(0, 0)]


Cell = Union[str, Text]


class Column:
    __slots__ = ("header", "no_wrap", "justify", "ratio")

    def __init__(self, header: str, no_wrap: bool, justify: str, ratio: int) -> None:
        self.header, self.no_wrap, self.justify, self.ratio = header, no_wrap, justify, ratio


class Table:
    """Columns with a header and a rule under it; cells wrap inside their column, the table fits the width.

    A cell wraps at spaces only: a wrapping column is given at least its longest word (a rule id, a pip
    requirement), so a word is cut only when it alone is wider than the whole line. When the columns cannot all
    have that room, each row is stacked instead: its first `stack_head` cells on one line, aligned from row to
    row, and every other non-empty cell under them as "header: text", short ones side by side.
    """

    def __init__(self, stack_head: int = 1) -> None:
        self.columns: list[Column] = []
        self.rows: list[list[Text]] = []
        self.stack_head = stack_head

    def add_column(self, header: str, *, no_wrap: bool = False, justify: str = "left", ratio: int = 1) -> None:
        self.columns.append(Column(header, no_wrap, justify, ratio))

    def add_row(self, *cells: Cell) -> None:
        row = [c if isinstance(c, Text) else Text(str(c)) for c in cells]
        self.rows.append(row + [Text() for _ in range(len(self.columns) - len(row))])

    def _measure(self) -> tuple[list[int], list[int]]:
        """Each column's natural width and the narrowest it may wrap to."""
        natural, shortest = [], []
        for i, col in enumerate(self.columns):
            lines = [ln for c in [Text(col.header)] + [r[i] for r in self.rows] for ln in c.plain.split("\n")]
            natural.append(max(len(ln) for ln in lines))
            longest_word = max(len(w) for ln in lines for w in ln.split(" "))
            shortest.append(natural[-1] if col.no_wrap else min(natural[-1], max(MIN_WRAP, longest_word)))
        return natural, shortest

    def fits(self, width: int) -> bool:
        """Whether the columns side by side fit `width` without cutting a word."""
        return sum(self._measure()[1]) + len(GAP) * (len(self.columns) - 1) <= width

    def widths(self, width: int) -> list[int]:
        """Natural widths when they fit; otherwise the wrapping columns share what the others leave, by ratio, none
        narrower than its shortest (the result is wider than `width` when the table does not fit)."""
        natural, shortest = self._measure()
        room = width - len(GAP) * (len(self.columns) - 1)
        if sum(natural) <= room:
            return natural
        out = list(natural)
        flexible = [i for i, c in enumerate(self.columns) if not c.no_wrap]
        left = room - sum(natural[i] for i in range(len(out)) if i not in flexible)
        while flexible:
            total = sum(self.columns[i].ratio for i in flexible)
            share = {i: left * self.columns[i].ratio // total for i in flexible}
            # Columns that would fall below their shortest take it first: that only narrows the others' shares,
            # whereas settling a column at its natural width only widens them.
            starved = [i for i in flexible if share[i] < shortest[i]]
            settled = starved or [i for i in flexible if natural[i] <= share[i]]
            if not settled:
                for i in flexible:
                    out[i] = share[i]
                out[flexible[-1]] += left - sum(share.values())
                break
            for i in settled:
                out[i] = shortest[i] if starved else natural[i]
                left -= out[i]
                flexible.remove(i)
        return out

    def lines(self, width: int) -> list[Text]:
        if not self.fits(width):
            return self._stacked(width)
        widths = self.widths(width)
        out = self._row([Text(c.header, style="bold") for c in self.columns], widths)
        out.append(Text("─" * (sum(widths) + len(GAP) * (len(widths) - 1))))
        for row in self.rows:
            out.extend(self._row(row, widths))
        return out

    def _stacked(self, width: int) -> list[Text]:
        head = min(max(1, self.stack_head), len(self.columns))
        head_widths = [max([len(ln) for r in self.rows for ln in r[i].plain.split("\n")] or [0]) for i in range(head)]
        indent = " " * STACK_INDENT
        out: list[Text] = []
        for row in self.rows:
            out.extend(self._line(row[:head], head_widths).wrap(width, indent=STACK_INDENT))
            packed: Text | None = None
            for col, cell in zip(self.columns[head:], row[head:]):
                if not cell.plain.strip():
                    continue
                label = " ".join(col.header.split())
                item = Text(f"{label}: ", style="dim").append_text(cell)
                single = "\n" not in cell.plain
                if single and packed is not None and len(packed.plain) + len(GAP) + len(item.plain) <= width:
                    packed.append(GAP).append_text(item)
                    continue
                if packed is not None:
                    out.extend(packed.wrap(width, indent=STACK_INDENT + HANG))
                    packed = None
                if single:
                    packed = Text(indent).append_text(item)
                else:
                    lines = item.split_lines()
                    block = Text(indent).append_text(lines[0])
                    for line in lines[1:]:
                        block.append("\n" + indent + " " * HANG).append_text(line)
                    out.extend(block.wrap(width, indent=STACK_INDENT + HANG))
            if packed is not None:
                out.extend(packed.wrap(width, indent=STACK_INDENT + HANG))
        return out

    def _row(self, cells: Sequence[Text], widths: Sequence[int]) -> list[Text]:
        wrapped = [cell.wrap(w) for cell, w in zip(cells, widths)]
        return [self._line([w[k] if k < len(w) else Text() for w in wrapped], widths)
                for k in range(max(len(w) for w in wrapped))]

    def _line(self, cells: Sequence[Text], widths: Sequence[int]) -> Text:
        line = Text()
        last = len(cells) - 1
        for i, (cell, w, col) in enumerate(zip(cells, widths, self.columns)):
            room = w - len(cell.plain)
            before = room if col.justify == "right" else room // 2 if col.justify == "center" else 0
            line.append(" " * before)
            line.append_text(cell)
            if i < last:
                line.append(" " * (room - before) + GAP)
        return line


def line_width(terminal: bool) -> int:
    """The width reports are laid out to: COLUMNS when it is a positive number, on a terminal or not (as rich, pip
    and ruff do); otherwise the terminal's width, or FILE_WIDTH off a terminal; never less than MIN_WIDTH."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    if terminal:
        import shutil

        return max(MIN_WIDTH, shutil.get_terminal_size((FILE_WIDTH, 24)).columns)
    return FILE_WIDTH


class Console:
    """Where a report is written: colour and width follow the stream (a terminal, a pipe, a file); see line_width."""

    def __init__(self, file: IO[str] | None = None) -> None:
        self.file = file or sys.stdout
        terminal = hasattr(self.file, "isatty") and self.file.isatty()
        env = os.environ
        self.color = bool(env.get("FORCE_COLOR")) or (terminal and not env.get("NO_COLOR")
                                                       and env.get("TERM") != "dumb")
        self.width = line_width(terminal)

    def print(self, *objects: Union[Cell, Table], style: str = "") -> None:
        """Write each object on its own lines: text wraps to the width, a table fits it."""
        if not objects:
            self.file.write("\n")
            return
        for obj in objects:
            if isinstance(obj, Table):
                lines = obj.lines(self.width)
            else:
                text = obj if isinstance(obj, Text) else Text(str(obj))
                if style:
                    text = Text(style=style).append_text(text)
                plain = text.plain
                lines = text.wrap(self.width, indent=len(plain) - len(plain.lstrip(" ")) + HANG)
            self.file.write("".join(line.render(self.color).rstrip(" ") + "\n" for line in lines))
