"""The site's HTML pages: one per rule, backend, compute capability and library release, with indexes."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from ..engine.expr import render_range
from ..engine.releases import RELEASES
from ..engine.rules import Rule, RuleBase
from ..environment import PACKAGE_LABELS, parse_version
from ..gpus import gpu_catalogue

NAV = (("index.html", "Picker"), ("search.html", "Search"), ("rules/index.html", "Rules"),
       ("advisories.html", "Advisories"), ("backends/index.html", "Backends"), ("arch/index.html", "GPUs"),
       ("releases/index.html", "Releases"), ("matrix/index.html", "Coverage"), ("plots.html", "Head dims"))

STATUS_LABELS = {"supported": "✓ runs", "known-bug": "⚠ runs, known bug", "wrong-results": "⚠ wrong results",
                 "unsupported": "✗ refused", "api-mismatch": "✗ fails at run time", "depends": "? depends",
                 "outside-rules": "outside the rules", "not-installed": "not installed"}
"""DESIGN.md's verdict states, as the text report shows them."""

e = html.escape


def page(title: str, body: str, depth: int = 0, scripts: Sequence[str] = ()) -> str:
    """A whole page: the navigation bar, the body, the style sheet and scripts, all by relative links."""
    up = "../" * depth
    nav = " ".join(f'<a href="{up}{href}">{e(label)}</a>' for href, label in NAV)
    tags = "".join(f'<script src="{up}assets/{s}"></script>' for s in scripts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{e(title)} · attndoctor</title><link rel="stylesheet" href="{up}assets/style.css">'
            f'<script src="{up}assets/errors.js"></script></head>'
            f'<body><nav>{nav}</nav><main><h1>{e(title)}</h1>\n{body}\n</main>'
            f'<pre id="page-errors" hidden></pre>{tags}</body></html>\n')


def rule_href(rule_id: str, depth: int) -> str:
    return f'{"../" * depth}rules/{rule_id}.html'


def rule_link(rule_id: str, depth: int) -> str:
    return f'<a href="{rule_href(rule_id, depth)}">{e(rule_id)}</a>'


def _linkify_refs(ref: str) -> str:
    """A reference with its GitHub issue/PR numbers and URLs as links."""
    out = e(ref)
    out = re.sub(r"(https?://[^\s)&]+)", r'<a href="\1">\1</a>', out)
    out = re.sub(r"(?<![\w/])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d+)",
                 r'<a href="https://github.com/\1/issues/\2">\1#\2</a>', out)
    return out


def rule_page(rule: Rule) -> str:
    """Everything `rules show` says of one rule."""
    rows: list[tuple[str, str]] = [
        ("backends", ", ".join(f'<a href="../backends/{b}.html">{e(b)}</a>' for b in rule.backends)),
        ("effect", f"{e(rule.effect)} (shows at {e(rule.surfaces)})"),
    ]
    if rule.when:
        rows.append(("versions / GPUs", e(" and ".join(render_range(k, v) for k, v in rule.when.items()))))
    if rule.condition_text:
        rows.append(("condition", f"<code>{e(rule.condition_text)}</code>"))
    rows.append(("message", e(rule.message)))
    if rule.symptom:
        rows.append(("symptom", e(rule.symptom)))
    for fix in rule.fixes:
        rows.append(("fix", e(fix.describe())))
    if rule.fixed_in:
        rows.append(("fixed in", e(", ".join(f"{PACKAGE_LABELS.get(k, k)} {v}" for k, v in rule.fixed_in.items()))))
    if rule.workaround:
        rows.append(("workaround", e(rule.workaround)))
    for ref in rule.references:
        rows.append(("source", _linkify_refs(ref)))
    rows.append(("evidence", e(rule.evidence)))
    if rule.notes:
        rows.append(("notes", e(rule.notes)))
    for ex in rule.examples:
        verb = "applies" if ex.applies else "does not apply"
        rows.append(("example", f"{verb}: config <code>{e(str(dict(ex.config)))}</code> "
                                f"env <code>{e(str(dict(ex.env)))}</code>"))
    rows.append(("defined in", f"<code>rules/{e(rule.file)}:{rule.line}</code>"))
    kind = "Advisory" if rule.advisory else "Rule"
    body = (f'<p class="kind">{kind}: {e(rule.title)}</p><table class="facts">'
            + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>")
    return page(rule.id, body, depth=1)


def rule_table(rules: Iterable[Rule], depth: int) -> str:
    rows = "".join(f"<tr><td>{rule_link(r.id, depth)}</td><td>{e(', '.join(r.backends))}</td>"
                   f"<td>{e(r.effect)}</td><td>{e(r.title)}</td></tr>" for r in rules)
    return f'<table class="list"><tr><th>id</th><th>backends</th><th>effect</th><th>title</th></tr>{rows}</table>'


def backend_page(base: RuleBase, backend_id: str) -> str:
    b = base.backend(backend_id)
    rules = list(base.rules_for(backend_id))
    horizons = [h for h in base.horizons if backend_id in h.backends]
    body = (f"<p>{e(b.label)}</p><table class='facts'><tr><th>framework</th><td>{e(b.framework)}</td></tr>"
            f"<tr><th>needs</th><td>{e(', '.join(PACKAGE_LABELS.get(p, p) for p in b.requires))}</td></tr>"
            f"<tr><th>how to call it</th><td><code>{e(b.select)}</code></td></tr>"
            + "".join(f"<tr><th>source</th><td>{_linkify_refs(r)}</td></tr>" for r in b.references)
            + "".join(f"<tr><th>modelled {e(PACKAGE_LABELS.get(h.package, h.package))}</th>"
                      f"<td>{e(h.oldest)} to {e(h.newest)}</td></tr>" for h in horizons)
            + f"</table><h2>{len(rules)} rules and advisories</h2>" + rule_table(rules, 1))
    return page(backend_id, body, depth=1)


def _sm_applies(rule: Rule, sm: int) -> bool:
    spec = rule.when.get("sm")
    return spec is not None and spec.contains(parse_version(str(sm)))


def arch_page(base: RuleBase, group: Sequence[int], matrix_names: Mapping[int, str]) -> str:
    sm = group[0]
    gpus = [g for g in gpu_catalogue() if g.sm in group]
    arch = gpus[0].arch if gpus else ""
    rows = "".join(f"<tr><td>{e(g.name)}</td><td>sm{g.sm}</td><td>{g.memory_gib or ''}</td></tr>" for g in gpus)
    rules = [r for r in base.rules if _sm_applies(r, sm)]
    matrix = (f'<p>Coverage matrix: <a href="../matrix/{matrix_names[sm]}.html">{e(matrix_names[sm])}</a></p>'
              if sm in matrix_names else "")
    body = (f"<p>{e(arch)}; compute capabilities {', '.join(f'sm{s}' for s in group)} meet every rule's GPU condition alike."
            f" In the picker, pick any of these GPUs.</p>{matrix}"
            f"<table class='list'><tr><th>GPU</th><th>sm</th><th>memory (GiB)</th></tr>{rows}</table>"
            f"<h2>Rules whose GPU range names sm{sm} ({len(rules)})</h2>" + rule_table(rules, 1))
    return page(f"sm{sm}" + (f" ({arch})" if arch else ""), body, depth=1)


def release_changes(base: RuleBase, package: str, releases: Sequence[str]) -> dict[str, list[tuple[str, Rule]]]:
    """Per release: the rules whose version range on `package` the release enters ('starts') or leaves ('ends')."""
    out: dict[str, list[tuple[str, Rule]]] = defaultdict(list)
    versions = [parse_version(v) for v in releases]
    for rule in base.rules:
        spec = rule.when.get(package)
        if spec is None:
            continue
        inside = [spec.contains(v) for v in versions]
        for i in range(1, len(versions)):
            if inside[i] and not inside[i - 1]:
                out[releases[i]].append(("starts", rule))
            elif inside[i - 1] and not inside[i]:
                out[releases[i]].append(("ends", rule))
        if inside[0]:
            out[releases[0]].append(("in range", rule))
    return out


def release_slug(package: str, version: str) -> str:
    return f"{package}-{version}"


def release_page(package: str, version: str, changes: Sequence[tuple[str, Rule]], prev: str | None) -> str:
    label = PACKAGE_LABELS.get(package, package)
    verbs = {"starts": "applies from this release", "ends": "no longer applies (fixed or lifted)",
             "in range": "applies at the oldest modelled release"}
    rows = "".join(f"<tr><td>{rule_link(r.id, 1)}</td><td>{e(verbs[kind])}</td><td>{e(', '.join(r.backends))}</td>"
                   f"<td>{e(r.title)}</td></tr>" for kind, r in changes)
    since = f" since {e(label)} {e(prev)}" if prev else ""
    body = (f"<p>What changed{since}, as the rules' version ranges say.</p>"
            + (f"<table class='list'><tr><th>rule</th><th>change</th><th>backends</th><th>title</th></tr>{rows}"
               "</table>" if rows else "<p>No rule's range starts or ends at this release.</p>"))
    return page(f"{label} {version}", body, depth=1)


def releases_index() -> str:
    parts = []
    for package, releases in RELEASES.items():
        links = " ".join(f'<a href="{release_slug(package, v)}.html">{e(v)}</a>' for v in releases)
        parts.append(f"<h2>{e(PACKAGE_LABELS.get(package, package))}</h2><p>{links}</p>")
    return page("Library releases", "".join(parts), depth=1)


def matrix_page(matrix: Any) -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in matrix.headers)
    rows = "".join(f"<tr><th>{e(feature)}</th>" + "".join(
        f'<td class="{"ok" if c.text == "✓" else "no" if c.text == "✗" else "part"}">{e(c.text)}</td>'
        for c in cells) + "</tr>" for feature, cells in matrix.rows)
    body = (f"<p>{e(matrix.gpu)} (sm{matrix.sm}): the releases of each column's package that run each feature, "
            f"from <code>attndoctor rules matrix --gpu '{e(matrix.gpu)}'</code>.</p>"
            f'<div class="wide"><table class="matrix"><tr><th>feature</th>{head}</tr>{rows}</table></div>')
    return page(f"Coverage on {matrix.gpu}", body, depth=1)
