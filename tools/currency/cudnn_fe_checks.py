"""Print every cuDNN-version-gated SDPA check of cudnn-frontend wheels, so a new release is a rerun and a diff.

Usage:
    pip download --no-deps -d /work/cache/cfe nvidia-cudnn-frontend==1.32.0
    python tools/currency/cudnn_fe_checks.py /work/cache/cfe/nvidia_cudnn_frontend-1.32.0-*.whl
    python tools/currency/cudnn_fe_checks.py --diff OLD.whl NEW.whl

Reads include/cudnn_frontend/node/{sdpa*,scaled_dot_product_flash_attention}.h inside each wheel (a zip) and prints,
per statement that compares a cuDNN version (detail::get_backend_version(), get_compiled_version(),
effective_cudnn_ver, prerequisite_version), the wheel, file:line, the versions it names (92600 -> 9.26.0) and the
statement with its message, whitespace collapsed. --diff prints the checks only one of two wheels holds, matched on
file and statement text (line numbers move between releases).
"""

import argparse
import re
import sys
import zipfile
from pathlib import PurePosixPath
from typing import Iterator, NamedTuple

HEADERS = re.compile(r"include/cudnn_frontend/node/(sdpa[^/]*|scaled_dot_product_flash_attention)\.h$")
GATE = re.compile(r"get_backend_version\(\)|get_compiled_version\(\)|effective_cudnn_ver|prerequisite_version")
STATEMENT_START = re.compile(r"^\s*(RETURN_CUDNN_FRONTEND_ERROR_IF|CUDNN_FE_VALIDATE|if\s*\(|else if\s*\(|bool\b|"
                             r"auto\b|int\b|int64_t\b|return\b|[A-Za-z_][\w:<>]*\s+[A-Za-z_]\w*\s*=)")
VERSION_INT = re.compile(r"\b(8\d{3}|9\d{4}|1\d{5})\b")


class Check(NamedTuple):
    """One version-gated statement of one header."""

    wheel: str
    path: str
    line: int
    versions: tuple[str, ...]
    text: str


def cudnn_version(number: int) -> str:
    """cuDNN's integer version as text: major*1000+minor*100+patch before 9, major*10000+minor*100+patch from 9."""
    if number < 10000:
        return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"
    return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"


def _statement(lines: list[str], index: int) -> tuple[int, str]:
    """The statement holding line `index`: back to its start, on until its parentheses close."""
    start = index
    opens_here = re.search(r"\bif\s*\(", lines[index]) is not None
    while not opens_here and start > 0 and not STATEMENT_START.match(lines[start]) and index - start < 8:
        start -= 1
    depth, end, seen = 0, start, False
    while end < len(lines):
        code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', lines[end])
        depth += code.count("(") - code.count(")")
        seen = seen or "(" in code
        if end >= index and depth <= 0 and (seen or code.rstrip().endswith((";", "{"))):
            break
        end += 1
    text = " ".join(part.strip() for part in lines[start:end + 1])
    return start, re.sub(r"\s+", " ", text)


def checks(wheel: str) -> Iterator[Check]:
    """The version-gated statements of one wheel's SDPA headers, in file and line order."""
    label = PurePosixPath(wheel).name
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(name for name in archive.namelist() if HEADERS.search(name))
        for name in names:
            lines = archive.read(name).decode("utf-8", "replace").splitlines()
            path = name[name.index("include/"):]
            done: set[int] = set()
            for index, line in enumerate(lines):
                if not GATE.search(line) or line.lstrip().startswith("//"):
                    continue
                start, text = _statement(lines, index)
                if start in done:
                    continue
                done.add(start)
                versions = tuple(sorted({cudnn_version(int(n)) for n in VERSION_INT.findall(text)}))
                yield Check(label, path, start + 1, versions, text)


def main(argv: list[str] | None = None) -> int:
    """Print the checks of each wheel, or the difference between two."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+")
    parser.add_argument("--diff", action="store_true", help="two wheels: print the checks only one of them holds")
    args = parser.parse_args(argv)
    if args.diff:
        if len(args.wheels) != 2:
            parser.error("--diff takes two wheels")
        old, new = (list(checks(w)) for w in args.wheels)
        keys_old = {(c.path, c.text) for c in old}
        keys_new = {(c.path, c.text) for c in new}
        for c in old:
            if (c.path, c.text) not in keys_new:
                print(f"- {c.wheel} {c.path}:{c.line} [{', '.join(c.versions)}] {c.text}")
        for c in new:
            if (c.path, c.text) not in keys_old:
                print(f"+ {c.wheel} {c.path}:{c.line} [{', '.join(c.versions)}] {c.text}")
        return 0
    for wheel in args.wheels:
        for c in checks(wheel):
            print(f"{c.wheel} {c.path}:{c.line} [{', '.join(c.versions)}] {c.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
