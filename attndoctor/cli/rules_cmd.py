"""`attndoctor rules`: list, show, lint and tabulate the rule base (modelled on `ruff rule`)."""

from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer

from ..words import plural
from .common import handle_errors

rules_app = typer.Typer(help="Browse and check the rule base.", no_args_is_help=True)

RulesDir = typer.Option(None, "--rules-dir", help="A folder of rule files instead of the bundled rules.")
Format = typer.Option("text", "--format", help="text | json.")


def _base(rules_dir: Optional[str]):
    from ..engine.rules import load_rulebase

    return load_rulebase(rules_dir)


def _check_format(fmt: str, accepted: tuple[str, ...] = ("text", "json")) -> None:
    from ..errors import UsageError

    if fmt not in accepted:
        raise UsageError(f"--format: unknown format {fmt!r}; accepted: {', '.join(accepted)}")


@rules_app.command("list")
@handle_errors
def list_rules(backend: Optional[List[str]] = typer.Option(None, "--backend", help="Only rules about this backend."),
               effect: Optional[List[str]] = typer.Option(None, "--effect", metavar="EFFECT",
                                                          help="Only rules of this effect (wrong-results lists the "
                                                               "known-bug advisories)."),
               advisories: bool = typer.Option(False, "--advisories", help="Only advisories: known bugs of kernels "
                                               "that accept the call."),
               grep: Optional[str] = typer.Option(None, "--grep", metavar="TEXT", help="Only rules whose title, "
                                                  "message or symptom contains TEXT (case-insensitive)."),
               fmt: str = Format, rules_dir: Optional[str] = RulesDir) -> None:
    """List every rule: id, backends, effect, title."""
    from ..engine.rules import EFFECTS
    from ..errors import UsageError

    _check_format(fmt)
    unknown = next((e for e in effect or () if e not in EFFECTS), None)
    if unknown is not None:
        raise UsageError(f"--effect: unknown effect {unknown!r}; accepted: {', '.join(EFFECTS)}")
    base = _base(rules_dir)
    base.check_backend_ids(backend)
    rules = [r for r in base.rules if (not backend or set(backend) & set(r.backends))
             and (not effect or r.effect in effect) and (not advisories or r.advisory)
             and (not grep or grep.lower() in f"{r.title}\n{r.message}\n{r.symptom}".lower())]
    if fmt == "json":
        sys.stdout.write(json.dumps([r.to_dict() for r in rules], indent=2) + "\n")
        return
    from ..report.term import Console, Table

    table = Table()
    for column in ("id", "backends", "effect", "title"):
        table.add_column(column, no_wrap=column in ("id", "effect"))
    for r in rules:
        table.add_row(r.id, ", ".join(r.backends), r.effect, r.title)
    console = Console()
    console.print(table)
    console.print(plural(len(rules), "rule"))


@rules_app.command("show")
@handle_errors
def show_rule(rule_id: str = typer.Argument(..., help="A rule id, e.g. TE-FUSED-SEQ64-CUDNN8."),
              fmt: str = Format, rules_dir: Optional[str] = RulesDir) -> None:
    """Everything about one rule: what it says, when, the symptom, the fix, the source, its examples."""
    from ..errors import UsageError

    _check_format(fmt)
    base = _base(rules_dir)
    rule = base.rule(rule_id) or base.rule(rule_id.upper())
    if rule is None:
        import difflib

        close = difflib.get_close_matches(rule_id.upper(), [r.id for r in base.rules], n=1)
        hint = f"; did you mean {close[0]}?" if close else "; see `attndoctor rules list`"
        raise UsageError(f"no rule {rule_id!r}{hint}")
    if fmt == "json":
        doc = rule.to_dict()
        doc["examples"] = [{"applies": e.applies, "config": dict(e.config), "env": dict(e.env)} for e in rule.examples]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    from ..engine.expr import render_range
    from ..report.term import Console, Text

    console = Console()
    console.print(Text(rule.id, style="bold").append(f": {rule.title}"))
    console.print()
    console.print(f"backends:   {', '.join(rule.backends)}")
    console.print(f"effect:     {rule.effect} (shows at {rule.surfaces})")
    if rule.when:
        console.print("when:       " + " and ".join(render_range(k, v) for k, v in rule.when.items()))
    if rule.condition_text:
        console.print(f"condition:  {rule.condition_text}")
    console.print(f"message:    {rule.message}")
    if rule.symptom:
        console.print(f"symptom:    {rule.symptom}")
    for fix in rule.fixes:
        console.print(f"fix:        {fix.describe()}")
    for ref in rule.references:
        console.print(f"source:     {ref}")
    console.print(f"evidence:   {rule.evidence}")
    if rule.notes:
        console.print(f"notes:      {rule.notes}")
    for e in rule.examples:
        verb = "applies" if e.applies else "does not apply"
        console.print(f"example:    {verb}: config {dict(e.config)} env {dict(e.env)}")
    console.print(f"defined in: {rule.file}:{rule.line}", style="dim")


@rules_app.command("lint")
@handle_errors
def lint_rules(rules_dir: Optional[str] = RulesDir) -> None:
    """Check the rule base: examples replay, every rule has a source and both kinds of example, fixes leave the range."""
    from ..engine.lint import lint
    from ..console.output import shown

    base = _base(rules_dir)
    problems = lint(base)
    for p in problems:
        sys.stdout.write(f"{shown(str(p))}\n")
    sys.stdout.write(f"{plural(len(base.rules), 'rule')} in {plural(len(base.files), 'file')}: "
                     f"{len(problems) or 'no'} problem{'s' if len(problems) != 1 else ''}\n")
    raise typer.Exit(1 if problems else 0)


@rules_app.command("matrix")
@handle_errors
def matrix(gpu: str = typer.Option("H100", "--gpu", help="The GPU (or sm90) the matrix is for."),
           backend: Optional[List[str]] = typer.Option(None, "--backend", help="Only these backends."),
           fmt: str = typer.Option("text", "--format", help="text | markdown | json."),
           rules_dir: Optional[str] = RulesDir) -> None:
    """The coverage picture generated from the rules: backend × feature → the versions that run it."""
    from ..engine.matrix import build_matrix, matrix_markdown

    _check_format(fmt, ("text", "markdown", "json"))
    base = _base(rules_dir)
    base.check_backend_ids(backend)
    from ..gpus import resolve_gpu

    resolve_gpu(gpu)
    result = build_matrix(base, gpu, backends=backend)
    if fmt == "markdown":
        sys.stdout.write(matrix_markdown(result))
        return
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
        return
    from ..report.term import Console, Table, Text

    table = Table()
    table.add_column("feature", no_wrap=True)
    for header in result.headers:
        table.add_column(header.replace(" (", "\n("), justify="center")
    for feature, cells in result.rows:
        table.add_row(feature, *[c.text for c in cells])
    console = Console()
    console.print(Text(f"{result.gpu} (sm{result.sm}): versions that run each feature", style="bold"))
    console.print(table)


@rules_app.command("site")
@handle_errors
def site(output: str = typer.Option(..., "--output", "-o", metavar="DIR", help="The folder to write the site into."),
         workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Processes that compute the picker's "
                                               "tables (default: one per CPU)."),
         rules_dir: Optional[str] = RulesDir) -> None:
    """A static website from the rule base: the picker, a page per rule, backend, GPU and release, search, plots."""
    from ..site import build_site

    summary = build_site(output, rules_dir=rules_dir, workers=workers)
    sys.stderr.write(f"wrote {plural(summary.files, 'file')} ({summary.bytes / 1e6:.1f} MB) to {summary.output} "
                     f"in {summary.seconds:.0f} s; open {summary.output / 'index.html'}\n")
