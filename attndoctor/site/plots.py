"""Plots as inline SVG: which head dims each backend runs, release by release, on a few GPUs."""

from __future__ import annotations

import html
from typing import Sequence

from ..config import make_config
from ..engine.evaluate import Evaluator
from ..engine.matrix import AXIS
from ..engine.releases import RECENT, RELEASES, flash_attn_for, short
from ..engine.rules import RuleBase
from ..environment import environment_from_flags

PLOT_GPUS = ("A100", "H100", "RTX4090", "B200")
PLOT_HDIMS = (32, 64, 80, 96, 128, 160, 192, 224, 256)
COLOURS = {"supported": "#5cb270", "known-bug": "#e9a23b", "depends": "#f2d46b", "outside-rules": "#c9c9c9"}
REFUSED = "#d9595b"


def head_dim_grid(base: RuleBase, gpu: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """Rows of (backend at release, status per head dim) for bf16 training, seqlen 4096, 16 heads."""
    evaluator = Evaluator(base)
    env0 = environment_from_flags({"gpu": gpu, **RECENT})
    rows = []
    for backend in base.backends:
        axis = AXIS.get(backend.framework, backend.requires[0] if backend.requires else "torch")
        for version in RELEASES.get(axis, (RECENT.get(axis, ""),)):
            env = env0.with_version(axis, version)
            if axis == "te":
                env = env.with_version("flash_attn", flash_attn_for(version))
            statuses = []
            for hdim in PLOT_HDIMS:
                config = make_config({"batch": 2, "heads": 16, "seqlen": 4096, "hdim": hdim, "dtype": "bf16",
                                      "train": True, "layout": "bshd"})
                statuses.append(evaluator.verdict(backend, config, env, search_fix=False).status)
            rows.append((f"{backend.id} ({axis} {short(version)})", statuses))
    return env0.gpu or gpu, rows


def heatmap_svg(title: str, rows: Sequence[tuple[str, Sequence[str]]]) -> str:
    """A grid: a row per backend release, a column per head dim, coloured by status, with a title per cell."""
    left, cell, top = 230, 26, 34
    width, height = left + cell * len(PLOT_HDIMS) + 10, top + 14 * len(rows) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{html.escape(title)}">']
    for j, hdim in enumerate(PLOT_HDIMS):
        out.append(f'<text x="{left + j * cell + cell / 2}" y="{top - 8}" text-anchor="middle">{hdim}</text>')
    for i, (label, statuses) in enumerate(rows):
        y = top + i * 14
        out.append(f'<text x="{left - 6}" y="{y + 10}" text-anchor="end">{html.escape(label)}</text>')
        for j, status in enumerate(statuses):
            colour = COLOURS.get(status, REFUSED)
            out.append(f'<rect x="{left + j * cell}" y="{y}" width="{cell - 2}" height="12" fill="{colour}">'
                       f'<title>{html.escape(label)}, head dim {PLOT_HDIMS[j]}: {html.escape(status)}</title></rect>')
    out.append("</svg>")
    return "".join(out)


def plots(base: RuleBase) -> list[tuple[str, str]]:
    """(GPU name, SVG) per plotted GPU."""
    out = []
    for gpu in PLOT_GPUS:
        name, rows = head_dim_grid(base, gpu)
        out.append((name, heatmap_svg(f"head dims by release on {name}", rows)))
    return out


def legend() -> str:
    items = [("runs", COLOURS["supported"]), ("runs, known bug", COLOURS["known-bug"]),
             ("depends", COLOURS["depends"]), ("outside the rules", COLOURS["outside-rules"]),
             ("refused or fails", REFUSED)]
    return " ".join(f'<span style="display:inline-block;width:12px;height:12px;background:{c}"></span> '
                    f'{html.escape(t)}' for t, c in items)


