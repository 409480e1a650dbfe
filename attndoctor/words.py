"""Small English for user-visible text, in one place: a count with its noun, "a" or "an"."""

from __future__ import annotations


def plural(n: int, noun: str, plural_form: str | None = None) -> str:
    """'1 check', '2 checks'; `plural_form` where adding an s is wrong ('processes')."""
    return f"{n} {noun if n == 1 else plural_form or noun + 's'}"


def a(word: str) -> str:
    """'an unsupported', 'a slow': the article by the word's first letter (the words shown here are not 'unit'-like
    exceptions)."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


VERDICT_WORDS = {
    "supported": "runs {it}", "depends": "may not run {it}", "unsupported": "refuses {it}",
    "api-mismatch": "refuses {it} (API mismatch)", "wrong-results": "gives wrong results on {it}",
    "not-installed": "is not installed",
}
"""What a backend does with a config, by verdict status: "sdpa-cudnn refuses it", never "sdpa-cudnn is depends"."""


def verdict_words(status: str, it: str = "it") -> str:
    return VERDICT_WORDS.get(status, "is " + status).format(it=it)
