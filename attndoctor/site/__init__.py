"""`attndoctor rules site`: a static site rendered from the rule base and the engine's verdicts (decides nothing)."""

from __future__ import annotations

import html
import json
import time
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from ..engine.releases import RELEASES
from ..engine.rules import RuleBase, load_rulebase
from ..errors import UsageError
from . import lattice, pages, plots

MATRIX_GPUS = ("A100", "H100", "RTX4090", "L40S", "B200")
"""GPUs whose coverage matrix gets a page (`attndoctor rules matrix --gpu NAME`)."""
ASSETS = ("style.css", "errors.js", "picker.js", "search.js")


class SiteSummary(NamedTuple):
    """What a build wrote."""

    output: Path
    files: int
    bytes: int
    seconds: float


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _js_data(name: str, value: Any) -> str:
    """A script that sets a global: pages opened from file:// cannot fetch JSON."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return f"window.{name} = {text};\n"


def picker_page(data: dict[str, Any]) -> str:
    """index.html: the picker."""
    selects = "".join(f'<label>{label}<select id="f-{key}"></select></label>'
                      for key, label in (("gpu", "GPU"), ("stack", "library versions"), ("dtype", "dtype"),
                                         ("mode", "training or inference"), ("hdim", "head dim"),
                                         ("feature", "feature")))
    stacks = "".join(f"<li><b>{html.escape(key)}</b> ({html.escape(label)}): "
                     f"{html.escape(', '.join(f'{k} {v}' for k, v in versions.items()))}</li>"
                     for key, label, versions in data["stacks"])
    body = (f'<p>Which attention backends run this configuration, why the others are refused, and the smallest fix: '
            f'the answers of <code>attndoctor explain</code>, computed by the same engine when the site was built '
            f'from {data["rule_count"]} rules. Shape: batch {lattice.BASE_CONFIG["batch"]}, '
            f'{lattice.BASE_CONFIG["heads"]} heads, seqlen {lattice.BASE_CONFIG["seqlen"]}, '
            f'layout {lattice.BASE_CONFIG["layout"]}.</p>'
            f'<form class="picker" onsubmit="return false">{selects}</form>'
            f'<p id="setting" class="muted"></p>'
            f'<table id="verdicts"><thead><tr><th>backend</th><th>verdict</th><th>reason</th><th>smallest fix</th>'
            f'</tr></thead><tbody id="verdict-rows"></tbody></table>'
            f'<p class="muted">The same answer in a terminal: <code id="explain-cmd"></code></p>'
            f'<h2>Library versions</h2><ul>{stacks}</ul>'
            f'<p class="muted">Any other config or version: <code>pip install attndoctor</code>, then '
            f'<code>attndoctor explain</code> with your flags.</p>')
    return pages.page("Attention backend picker", body, scripts=("data.js", "picker.js"))


def search_page(count: int) -> str:
    body = (f'<p><input id="q" type="search" size="60" placeholder="an id, a title word, an error message" '
            f'autofocus> <span id="count" class="muted">{count} rules and advisories</span></p>'
            f'<ul id="search-results"></ul>')
    return pages.page("Search the rules", body, scripts=("search-index.js", "search.js"))


def build_site(output: str | Path, rules_dir: str | None = None, workers: int | None = None) -> SiteSummary:
    """Write the whole site into `output` (made if missing)."""
    start = time.monotonic()
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output: {out} is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--output: cannot make {out}: {exc.strerror}") from None
    base = load_rulebase(rules_dir)
    data = lattice.build_tables(base, rules_dir, workers)
    data["rule_count"] = len(base.rules)
    templates = resources.files(__package__).joinpath("templates")
    for name in ASSETS:
        _write(out / "assets" / name, templates.joinpath(name).read_text(encoding="utf-8"))
    _write(out / "assets" / "data.js", _js_data("SITE_DATA", data))
    _write(out / "assets" / "search-index.js", _js_data(
        "SEARCH_INDEX", [[r.id, r.title, r.message if r.message != r.title else "", r.symptom] for r in base.rules]))
    _write(out / "index.html", picker_page(data))
    _write(out / "search.html", search_page(len(base.rules)))
    _rule_pages(out, base)
    _backend_pages(out, base)
    matrix_names = _matrix_pages(out, base)
    _arch_pages(out, base, lattice.sm_classes(base), matrix_names)
    _release_pages(out, base)
    _plots_page(out, base)
    _write(out / ".nojekyll", "")
    files = [p for p in out.rglob("*") if p.is_file()]
    return SiteSummary(out, len(files), sum(p.stat().st_size for p in files), time.monotonic() - start)


def _rule_pages(out: Path, base: RuleBase) -> None:
    for rule in base.rules:
        _write(out / "rules" / f"{rule.id}.html", pages.rule_page(rule))
    _write(out / "rules" / "index.html", pages.page(f"All {len(base.rules)} rules and advisories",
                                                     pages.rule_table(base.rules, 1), depth=1))
    advisories = [r for r in base.rules if r.advisory]
    _write(out / "advisories.html", pages.page(
        f"{len(advisories)} advisories", "<p>Known bugs of kernels that accept the call: the release that fixes "
        "each, or the values that trigger it, or how to avoid it.</p>" + pages.rule_table(advisories, 0)))


def _backend_pages(out: Path, base: RuleBase) -> None:
    for b in base.backend_ids:
        _write(out / "backends" / f"{b}.html", pages.backend_page(base, b))
    rows = "".join(f'<tr><td><a href="{b.id}.html">{html.escape(b.id)}</a></td><td>{html.escape(b.label)}</td>'
                   f'<td>{len(base.rules_for(b.id))}</td></tr>' for b in base.backends)
    _write(out / "backends" / "index.html", pages.page(
        "Backends", f"<table class='list'><tr><th>id</th><th>what</th><th>rules</th></tr>{rows}</table>", depth=1))


def _matrix_pages(out: Path, base: RuleBase) -> dict[int, str]:
    from ..engine.matrix import build_matrix

    names: dict[int, str] = {}
    links = []
    for gpu in MATRIX_GPUS:
        matrix = build_matrix(base, gpu)
        _write(out / "matrix" / f"{gpu}.html", pages.matrix_page(matrix))
        names[matrix.sm] = gpu
        links.append(f'<li><a href="{gpu}.html">{html.escape(matrix.gpu)}</a> (sm{matrix.sm})</li>')
    _write(out / "matrix" / "index.html", pages.page(
        "Coverage matrices", "<p>Backend × feature → the releases that run it, one table per GPU.</p>"
        f"<ul>{''.join(links)}</ul>", depth=1))
    return names


def _arch_pages(out: Path, base: RuleBase, classes: list[list[int]], matrix_names: dict[int, str]) -> None:
    links = []
    for group in classes:
        for sm in group:
            _write(out / "arch" / f"sm{sm}.html", pages.arch_page(base, [sm, *(s for s in group if s != sm)],
                                                                  matrix_names))
        links.append("<li>" + ", ".join(f'<a href="sm{sm}.html">sm{sm}</a>' for sm in group) + "</li>")
    _write(out / "arch" / "index.html", pages.page(
        "GPU architectures", "<p>Compute capabilities on one line meet every rule's GPU condition alike.</p>"
        f"<ul>{''.join(links)}</ul>", depth=1))


def _release_pages(out: Path, base: RuleBase) -> None:
    for package, releases in RELEASES.items():
        changes = pages.release_changes(base, package, releases)
        for i, version in enumerate(releases):
            _write(out / "releases" / f"{pages.release_slug(package, version)}.html",
                   pages.release_page(package, version, changes.get(version, []), releases[i - 1] if i else None))
    _write(out / "releases" / "index.html", pages.releases_index())


def _plots_page(out: Path, base: RuleBase) -> None:
    parts = [f"<p>bf16 training, 16 heads, seqlen 4096: which head dims each backend runs, release by release "
             f"(other packages at recent releases). {plots.legend()}</p>"]
    for name, svg in plots.plots(base):
        parts.append(f"<h2>{html.escape(name)}</h2><div class='wide'>{svg}</div>")
    _write(out / "plots.html", pages.page("Head dims by release", "".join(parts)))
