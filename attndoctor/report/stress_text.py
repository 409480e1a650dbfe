"""The text and JSON of `verify --stress`: which backends went wrong on which data regimes, and which of those are new."""

from __future__ import annotations

from typing import IO, Any

from ..runs.stress import StressReport
from ..words import plural
from .term import Console, Table, Text
from .text import environment_lines
from .formats import dump_json


def render_stress_text(report: StressReport, file: IO[str] | None = None, *, detailed: bool = False,
                       **_: Any) -> None:
    console = Console(file)
    for line in environment_lines(report.environment):
        console.print(line)
    head = Text()
    head.append("verify --stress: ", style="bold")
    head.append(f"{plural(report.probes, 'probe')} ({', '.join(report.backends) or 'no backend'}) in "
                f"{report.wall_s:.1f} s · seed {report.seed}")
    console.print(head)
    if report.shared:
        console.print(Text(f"  {plural(report.shared, 'case')} where every backend was off the float64 reference alike "
                           "(ill-conditioned inputs): no finding", style="dim"))
    console.print()
    if not report.findings:
        console.print(Text("no backend went wrong on any regime", style="green"))
    else:
        table = Table()
        for column, ratio in (("config", 2), ("regime", 1), ("backend", 1), ("finding", 3), ("known as", 2)):
            table.add_column(column, ratio=ratio)
        for f in report.findings:
            known = Text(", ".join(f.explained_by), style="yellow") if f.explained_by else Text("NEW", style="bold red")
            table.add_row(f.config.name or f.config.label(), f.regime, f.backend, f.detail, known)
        console.print(table)
    new = report.new
    if new:
        console.print()
        console.print(Text(f"{plural(len(new), 'finding')} no advisory explains; "
                           + ("a script that reproduces each:" if detailed else
                              "--details prints a script that reproduces each (also in --format json)"),
                           style="bold red"))
        if detailed:
            for f in new:
                console.print()
                console.print(Text(f"# {f.backend} · {f.regime} · {f.config.label()}", style="bold"))
                console.print(f.repro)
    if report.conventions:
        console.print()
        console.print(Text("rows that attend to nothing (masked-rows), what each backend writes there:", style="bold"))
        for name, seen in report.conventions.items():
            console.print(f"  {name}: " + " · ".join(f"{b} {w or '?'}" for b, w in seen.items()))
    if report.record_path:
        console.print(Text(f"observations written to {report.record_path}", style="dim"))


def render_stress_json(report: StressReport, stream: IO[str], **_: Any) -> None:
    dump_json(report.to_dict(), stream)
