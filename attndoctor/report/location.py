"""Where a config came from, as CI tools want it: a path relative to the working folder when it lies inside."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from ..engine.results import Report


def relative_path(file: str) -> str | None:
    """The file relative to the working folder in '/' form, or None when it lies outside."""
    path = Path(file).resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return None


def sources_by_label(report: Report) -> dict[str, tuple[str, int]]:
    """Gate checks name their config by label; this finds the file behind each."""
    out: dict[str, tuple[str, int]] = {}
    for result in report.results:
        if result.config.source:
            out.setdefault(result.config.name or result.config.label(), result.config.source)
    return out


def sarif_location(source: tuple[str, int] | None) -> dict[str, object] | None:
    """A SARIF physicalLocation: a %SRCROOT%-relative URI inside the working folder, else an absolute file URI."""
    if not source:
        return None
    file, line = source
    relative = relative_path(file)
    if relative is not None:
        artifact: dict[str, str] = {"uri": quote(relative), "uriBaseId": "%SRCROOT%"}
    else:
        artifact = {"uri": Path(file).resolve().as_uri()}
    out: dict[str, object] = {"artifactLocation": artifact}
    if line > 0:
        out["region"] = {"startLine": line}
    return out


def srcroot_uri() -> str:
    """The absolute URI %SRCROOT% stands for (SARIF wants a trailing slash)."""
    uri = Path.cwd().resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"


def github_file(source: tuple[str, int] | None) -> tuple[str, int] | None:
    """The `file` and `line` of a GitHub annotation (line 0: unknown)."""
    if not source:
        return None
    file, line = source
    relative = relative_path(file)
    return (relative if relative is not None else os.path.abspath(file)), line
