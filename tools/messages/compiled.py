"""Older and newer wordings of PyTorch's C++ attention messages, read from the compiled libraries of release wheels.

Only one release of the C++ sources is readable (Debian's 2.6.0 tarball), while users paste the texts of every
release. Each release's libtorch_cpu/libtorch_cuda keeps its messages' literals as strings: a literal that is the
same check reworded (first and last three words equal, or the release's shorter form of the message) gives the
message of that release, with the source message's backend and condition; a message all of whose literals are in a
release's library is emitted by that release too.
"""
from __future__ import annotations

import glob
import gzip
import os
import re
import sys
import zipfile

from .model import LIT, PH, Raw

LIBS = re.compile(r"^torch/lib/(lib)?torch_(cpu|cuda)\.(so|dylib|dll)$")
SEEN = 8
"""A library's strings are its runs of at least this many printable characters: a shorter literal (" gpu.") is
not looked for."""
_RUN = re.compile(rb"[\x20-\x7e\t]{%d,}" % SEEN)
MIN_LITERAL = 20
"""A first literal shorter than this (\"batch size must be positive\") has too many look-alikes to pair safely."""


def extract(wheel: str, out: str) -> int:
    """Write the printable strings of a torch wheel's libtorch_cpu and libtorch_cuda, one per line, gzipped."""
    seen: set = set()
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if LIBS.search(name):
                seen.update(m.group().decode("ascii") for m in _RUN.finditer(z.read(name)))
    with gzip.open(out, "wt", encoding="ascii") as fh:
        for s in sorted(seen):
            fh.write(s.replace("\\", "\\\\").replace("\n", "\\n") + "\n")
    return len(seen)


def _load(path: str) -> set:
    with gzip.open(path, "rt", encoding="ascii") as fh:
        return {line.rstrip("\n").replace("\\n", "\n").replace("\\\\", "\\") for line in fh}


def releases(cache: str) -> list:
    """(version, ref, strings) of each release whose library strings were extracted into the cache."""
    out = []
    for path in sorted(glob.glob(os.path.join(cache, "strings", "torch-*.txt.gz"))):
        version = os.path.basename(path)[len("torch-"):-len(".txt.gz")]
        out.append((version, f"wheel:torch-{version}", _load(path)))
    return out


def _ends(text: str) -> tuple:
    w = text.split()
    return " ".join(w[:3]), " ".join(w[-3:])


def sibling(literal: str, heads: dict, tails: dict, known: set) -> str | None:
    """The release's wording of a first literal: the same check reworded (first and last three words equal), or
    its shorter form ending a sentence; never a literal some indexed message already has."""
    if len(literal) < MIN_LITERAL or len(literal.split()) < 4:
        return None
    head, tail = _ends(literal)
    found = [s for s in heads.get(head, ()) if s in tails.get(tail, set()) and s != literal]
    shorter = [s for s in heads.get(head, ()) if literal.startswith(s) and len(s) >= MIN_LITERAL
               and re.search(r"[.)]\s*$", s) and len(s.split()) >= 4]
    found = [s for s in found + shorter if s not in known]
    return min(found, key=lambda s: (abs(len(s) - len(literal)), s)) if found else None


def variants(entries: list, cache: str):
    """Yield (item, release, ref, parts) for each reworded message, and (item, release, ref, None) for each release
    that emits an entry's own wording. `entries` are the C++ messages of the readable source release, each an item
    (entry, its parts)."""
    known = {p[1] for _, parts in entries for p in parts if p[0] == LIT}
    for version, ref, strings in releases(cache):
        heads: dict = {}
        tails: dict = {}
        for s in strings:
            if len(s) >= MIN_LITERAL:
                head, tail = _ends(s)
                heads.setdefault(head, []).append(s)
                tails.setdefault(tail, set()).add(s)
        for item in entries:
            parts = item[1]
            lits = [p[1] for p in parts if p[0] == LIT and len(p[1]) >= SEEN]
            if lits and all(lit in strings for lit in lits):
                yield item, version, ref, None
                continue
            if not parts or parts[0][0] != LIT:
                continue
            old = sibling(parts[0][1], heads, tails, known)
            if old is None:
                continue
            rest = []
            if not parts[0][1].startswith(old):
                for p in parts[1:]:
                    if p[0] == LIT and len(p[1]) >= SEEN and p[1] not in strings:
                        rest.append((PH, "rest", "r"))
                        break
                    rest.append(p)
            yield item, version, ref, [(LIT, old), *rest]


def raw_of(entry: dict, parts: list) -> Raw:
    text = "".join(p[1] if p[0] == LIT else "{" + p[1] + "}" for p in parts)
    return Raw(kind=entry["kind"], parts=parts, condition=entry["condition"], text=text[:300], line=0)


def main(argv: list | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m tools.messages.compiled WHEEL OUT.txt.gz", file=sys.stderr)
        return 2
    print(f"{extract(args[0], args[1])} strings", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
