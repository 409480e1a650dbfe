"""User-visible wording: counts agree with their nouns, "a"/"an" with the next sound, statuses read as English."""

from __future__ import annotations

import json
import re

import pytest

from attndoctor.words import a, plural

BAD = [
    (re.compile(r"\bis (depends|unsupported|api-mismatch|wrong-results|not-installed|supported)\b"), "is <status>"),
    (re.compile(r"\ba (?=[aeiouAEIOU]\w)(?!uni|use|one)"), "a before a vowel"),
    (re.compile(r"\ban (?=[b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z])"), "an before a consonant"),
    (re.compile(r"(?<![\d.])1 (?!\w+ss\b)[a-z-]+(?:ing [a-z]+)?s\b(?! (?:of|per|in)\b)"), "1 <plural>"),
    (re.compile(r"\w\(s\)"), "noun(s)"),
]


def _problems(text: str) -> list[str]:
    return [f"{why}: {m.group(0)!r} in {text[max(0, m.start() - 40):m.end() + 40]!r}"
            for pattern, why in BAD for m in pattern.finditer(text)]


def test_plural_and_article() -> None:
    assert [plural(n, "check") for n in (0, 1, 2)] == ["0 checks", "1 check", "2 checks"]
    assert plural(1, "failing check") == "1 failing check" and plural(3, "failing check") == "3 failing checks"
    assert plural(2, "rank", "ranks") == "2 ranks" and plural(1, "process", "processes") == "1 process"
    assert [a(w) for w in ("unsupported", "info", "api-mismatch", "slow", "wrong-results", "int", "number")] == \
        ["an unsupported", "an info", "an api-mismatch", "a slow", "a wrong-results", "an int", "a number"]


CASE = ["explain", "--hdim", "192", "--hdim-v", "128", "--heads", "128", "--seqlen", "4096", "--dtype", "bf16",
        "--train", "--causal", "--gpu", "H100", "--torch", "2.11.0", "--te", "2.3", "--flash-attn", "2.7.3"]


@pytest.mark.parametrize("extra", [
    ["--cudnn", "9.1.0", "--require", "sdpa-cudnn", "--fail-on", "unsupported"],
    ["--require", "sdpa-cudnn", "--fail-on", "info"],
    ["--cudnn", "9.1.0", "--require-any", "sdpa-cudnn,sdpa-flash", "--fail-on", "api-mismatch"],
])
@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_reports_read_as_english(cli, extra: list[str], fmt: str) -> None:
    code, out, err = cli(*CASE, *extra, "--format", fmt)
    assert code == 1, err
    text = " ".join(json.loads(out)["gate"]["reasons"]) if fmt == "json" else out
    assert not _problems(text)


def test_github_counts_one_failing_check(cli) -> None:
    code, out, _ = cli(*CASE, "--cudnn", "9.1.0", "--format", "github")
    assert code == 1 and re.search(r"\(1 failing check of \d+\)", out), out.splitlines()[-1]


def test_more_conditions_counts_agree(cli) -> None:
    from attndoctor.report import text

    for n in (1, 2):
        line = text.more_conditions(n)
        assert not _problems(line) and line.startswith(f"… and {n} more condition")
