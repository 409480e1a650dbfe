"""The text and JSON of `bench`: one table per config (time, TFLOP/s, % of peak, spread, memory, a bar per
backend), the recommendation with the code that selects it, and a summary over configs."""

from __future__ import annotations

from typing import IO, Any, Mapping

from ..runs.bench import BenchReport, ConfigBench, metric_ms
from .text import environment_lines
from .term import Console, Table, Text
from .formats import dump_json

BAR_WIDTH = 24
METRIC_LABEL = {"forward": "forward", "forward_backward": "forward+backward"}


def _ms(stats: Mapping[str, Any] | None) -> str:
    if not stats or stats.get("median_ms") is None:
        return ""
    return f"{stats['median_ms']:.3f}"


def _tflops(stats: Mapping[str, Any] | None) -> str:
    if not stats or stats.get("tflops") is None:
        return ""
    text = f"{stats['tflops']:.0f}" if stats["tflops"] >= 10 else f"{stats['tflops']:.2f}"
    if stats.get("peak_pct") is not None:
        text += f" ({stats['peak_pct']:.0f}%)"
    return text


def _gbs(stats: Mapping[str, Any] | None) -> str:
    if not stats or stats.get("gbs") is None:
        return ""
    text = f"{stats['gbs']:.0f}" if stats["gbs"] >= 10 else f"{stats['gbs']:.2f}"
    if stats.get("hbm_pct") is not None:
        text += f" ({stats['hbm_pct']:.0f}%)"
    return text


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _roofline(result: ConfigBench) -> str:
    """The metric's bytes, intensity and bound, in words."""
    if result.bytes is None:
        return ""
    moved = result.bytes.train if result.metric == "forward_backward" else result.bytes.forward
    text = f"{_bytes(moved)} moved"
    line = result.roofline.get(result.metric) or {}
    if line.get("intensity") is not None:
        text += f" · {line['intensity']:.0f} FLOP/byte"
    if line.get("bound"):
        side = "<" if line["bound"] == "memory" else ">="
        text += f" {side} ridge {line['ridge']:.0f}: {line['bound']}-bound"
        text += " (judge by % of HBM)" if line["bound"] == "memory" else " (judge by % of peak TFLOP/s)"
    return text


def _spread(stats: Mapping[str, Any] | None) -> str:
    if not stats or stats.get("spread_rel") is None:
        return ""
    return f"±{50 * stats['spread_rel']:.1f}%"


def _mem(value: Any) -> str:
    if value is None:
        return ""
    mib = float(value) / 2**20
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def _bar(ms: float | None, best: float | None) -> Text:
    """Speed relative to the fastest: a full bar is the fastest."""
    if ms is None or not best:
        return Text("")
    filled = max(1, round(BAR_WIDTH * best / ms))
    return Text("█" * filled + "·" * (BAR_WIDTH - filled), style="green" if filled == BAR_WIDTH else "cyan")


def _header(report: BenchReport) -> list[Text]:
    lines = environment_lines(report.environment)
    head = Text()
    head.append("bench: ", style="bold")
    n = len(report.results)
    timed = sum(len(r.measurements) for r in report.results)
    head.append(f"{n} config{'s' * (n != 1)} · {timed} backend runs in {report.wall_s:.1f} s · seed {report.seed}")
    gpu = report.gpu
    if gpu.get("name"):
        head.append(f" · {gpu['name']}", style="dim")
    lines.append(head)
    o = report.options
    graphs = "CUDA graphs where they capture, else eager" if o.get("graphs") != "off" else "eager (graphs off)"
    lines.append(Text(f"  median of >= {o.get('runs')} runs (CUDA events, after warm-up), input sets rotated past the "
                      f"L2 cache, {graphs}; spread = ±(p90 - p10) / 2 / median", style="dim"))
    peaks = gpu.get("peak_tflops") or {}
    if peaks:
        peak_text = ", ".join(f"{d} {v:g}" for d, v in peaks.items())
        lines.append(Text(f"  % = of the dense peak of the {gpu.get('catalogue')} ({peak_text} TFLOP/s); FLOPs: "
                          "forward 2·B·H·Sq·Skv·(D+Dv), /2 causal, backward 2.5× forward", style="dim"))
    else:
        lines.append(Text("  no catalogue peak for this device: TFLOP/s without % of peak", style="dim"))
    if gpu.get("bandwidth_gbs"):
        lines.append(Text(f"  GB/s = the bytes a call must move (Q, K, V, O; the K/V cache; backward's reads and "
                          f"writes) / time, % = of the {gpu['bandwidth_gbs']:g} GB/s of its memory", style="dim"))
    return lines


def _config_table(result: ConfigBench) -> Table:
    metric = result.metric
    train = result.config.train
    best = result.recommendation.ms
    table = Table()
    table.add_column("backend", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    table.add_column("fwd ms", justify="right", no_wrap=True)
    table.add_column("fwd TFLOP/s", justify="right", no_wrap=True)
    if train:
        table.add_column("fwd+bwd ms", justify="right", no_wrap=True)
        table.add_column("fwd+bwd TFLOP/s", justify="right", no_wrap=True)
    table.add_column("GB/s" + (" (fwd+bwd)" if train else ""), justify="right", no_wrap=True)
    table.add_column("spread", justify="right", no_wrap=True)
    table.add_column("peak mem", justify="right", no_wrap=True)
    table.add_column(f"speed ({METRIC_LABEL[metric]})", no_wrap=True)
    table.add_column("", ratio=2)
    ordered = sorted(result.measurements, key=lambda m: (metric_ms(m, metric) is None, metric_ms(m, metric) or 0))
    for m in ordered:
        notes = Text()
        if m.get("recommended"):
            notes.append("fastest ", style="bold green")
        if m.get("default_for"):
            notes.append(f"default of {', '.join(m['default_for'])} ", style="bold")
        if m.get("outcome") != "ok":
            notes.append(f"{m.get('outcome')}: {str(m.get('error') or '')[:200]}", style="red")
        elif m.get("mode_note") and m.get("mode") != "graph":
            notes.append(str(m["mode_note"])[:160], style="dim")
        stats = m.get(metric)
        row = [Text(m["backend"], style="bold" if m.get("recommended") else ""), str(m.get("mode") or ""),
               _ms(m.get("forward")), _tflops(m.get("forward"))]
        if train:
            row += [_ms(m.get("forward_backward")), _tflops(m.get("forward_backward"))]
        mem = m.get("mem_peak")
        row += [_gbs(stats), _spread(stats), _mem(mem), _bar(metric_ms(m, metric), best), notes]
        table.add_row(*row)
    return table


def _recommendation(result: ConfigBench) -> list[Text]:
    rec = result.recommendation
    if rec.backend is None:
        return [Text(f"  no backend could be timed for this config: {rec.note}", style="bold red")]
    lines = []
    head = Text("  fastest: ", style="bold")
    head.append(rec.backend, style="bold green")
    head.append(f" {rec.ms:.3f} ms ({METRIC_LABEL[result.metric]})")
    if rec.tie:
        head.append(f"; within the noise: {', '.join(rec.tie)}", style="dim")
    lines.append(head)
    default = Text("  default: ")
    if rec.default is None:
        default.append("no framework default could be named", style="dim")
    else:
        default.append(f"{rec.default_framework} picks {rec.default}")
        if rec.default_ms is None:
            default.append(" (not timed here)", style="yellow")
        elif rec.default == rec.backend:
            default.append(" — already the fastest", style="green")
        elif rec.default_within_noise:
            default.append(f" {rec.default_ms:.3f} ms — within the noise of the fastest, no change needed",
                           style="green")
        else:
            default.append(f" {rec.default_ms:.3f} ms — selecting {rec.backend} is {rec.speedup:.2f}x as fast "
                           f"({100 * (1 - 1 / rec.speedup):.0f}% less time)", style="bold yellow")
    lines.append(default)
    if rec.select and not (rec.default == rec.backend or rec.default_within_noise):
        lines.append(Text(f"  select it: {rec.select}", style="bold"))
    elif rec.select:
        lines.append(Text(f"  to force it: {rec.select}", style="dim"))
    if result.not_run:
        lines.append(Text("  not timed: " + "; ".join(f"{n['backend']} ({n['reason'][:140]})"
                                                      for n in result.not_run), style="dim"))
    return lines


def render_bench_text(report: BenchReport, file: IO[str] | None = None, **_: Any) -> None:
    console = Console(file)
    for line in _header(report):
        console.print(line)
    console.print()
    for result in report.results:
        title = Text(result.config.name or result.config.label(), style="bold")
        if result.config.name:
            title.append(f"  {result.config.label()}", style="dim")
        flops = result.flops
        title.append(f"  · {flops.forward / 1e9:.1f} GFLOP forward", style="dim")
        if result.bytes is not None:
            title.append(f" · {_roofline(result)}", style="dim")
        if result.defaults:
            title.append(f" · defaults for {', '.join(result.defaults)}", style="yellow")
        console.print(title)
        if result.measurements:
            console.print(_config_table(result))
        for line in _recommendation(result):
            console.print(line)
        console.print()
    if len(report.results) > 1:
        table = Table()
        for col in ("config", "fastest", "ms", "default", "speed-up"):
            table.add_column(col, no_wrap=True, justify="right" if col in ("ms", "speed-up") else "left")
        for r in report.results:
            rec = r.recommendation
            table.add_row(r.config.name or r.config.label(), rec.backend or "—",
                          f"{rec.ms:.3f}" if rec.ms else "", rec.default or "—",
                          f"{rec.speedup:.2f}x" if rec.speedup else "")
        console.print(Text("summary", style="bold"))
        console.print(table)


def render_bench_json(report: BenchReport, stream: IO[str], **_: Any) -> None:
    dump_json(report.to_dict(), stream)
