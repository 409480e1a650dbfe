"""Reads the support checks of every published flash-attn-4 beta wheel and writes them as a per-beta table and a diff.

Usage: python tools/fa4/fa4_checks.py [--cache /work/cache/fa4] [--out tools/fa4/out] [--offline]
See tools/fa4/README.md.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

PACKAGE = "flash-attn-4"
KNOWN_UNPUBLISHED = (0, 1, 2, 6)
"""Betas tagged upstream (fa4-v4.0.0.betaN) with no PyPI release; the script reports them, it does not guess them."""

MODULE = "flash_attn/cute/interface.py"
HOST_FUNCTIONS = re.compile(r"^(__init__|can_implement|_?validate\w*|_?check\w*|__post_init__)$")
"""Outside interface.py only these host-side functions are read: kernel bodies assert on layouts, not on support."""
SKIP_MODULES = re.compile(r"(bench|testing|test_)")

TOPICS = (
    ("arch", r"arch|compute_capability|\bsm_?\d|SM ?\d|major|cc\b|is_sm"),
    ("head-dim", r"head_dim|headdim|hdim|head_size|\bd(_v)?\b|head_dim_v"),
    ("dtype", r"dtype|float16|bfloat16|fp8|float8|e4m3|e5m2|fp32|float32"),
    ("causal-local-window", r"causal|local|window"),
    ("softcap", r"softcap"),
    ("dropout", r"dropout"),
    ("gqa", r"qhead_per_kvhead|num_head|nheads|pack_gqa|gqa|mqa"),
    ("seqlen", r"seqlen|max_seqlen"),
    ("varlen", r"cu_seqlens|varlen|seqused"),
    ("paged-kv", r"page_table|paged|page_size"),
    ("sinks", r"learnable_sink|\bsinks?\b|sink"),
    ("deterministic", r"deterministic"),
    ("score-mod-mask-mod", r"score_mod|mask_mod|aux_tensors|block_sparse"),
    ("splits", r"num_splits|split"),
)


def published_betas() -> list[int]:
    """The betas PyPI lists for the package (pip's own client; no other registry call)."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "--pre", PACKAGE],
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("Available versions:"))
    return sorted(int(m) for m in re.findall(r"4\.0\.0b(\d+)", line))


def wheel_path(cache: Path, beta: int) -> Path:
    return cache / f"flash_attn_4-4.0.0b{beta}-py3-none-any.whl"


def download(cache: Path, beta: int) -> Path:
    """The wheel of one beta, from the cache or through `pip download`."""
    path = wheel_path(cache, beta)
    if not path.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(cache), f"{PACKAGE}==4.0.0b{beta}"], check=True)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Checks(ast.NodeVisitor):
    """Collects assert and raise statements with the if-branches and function that enclose them."""

    def __init__(self, module: str, only_host: bool) -> None:
        self.module, self.only_host = module, only_host
        self.scope: list[str] = []
        self.context: list[str] = []
        self.found: list[dict] = []

    def _function(self, node: ast.AST) -> None:
        self.scope.append(node.name)  # type: ignore[attr-defined]
        saved, self.context = self.context, []
        self.generic_visit(node)
        self.context = saved
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_If(self, node: ast.If) -> None:
        test = _src(node.test)
        self.context.append(test)
        for stmt in node.body:
            self.visit(stmt)
        self.context[-1] = f"not ({test})"
        for stmt in node.orelse:
            self.visit(stmt)
        self.context.pop()

    def _wanted(self) -> bool:
        if not self.scope:
            return False
        return not self.only_host or bool(HOST_FUNCTIONS.match(self.scope[-1]))

    def visit_Assert(self, node: ast.Assert) -> None:
        if self._wanted():
            self._add("assert", node, _src(node.test), _src(node.msg) if node.msg else "")

    def visit_Raise(self, node: ast.Raise) -> None:
        if self._wanted() and node.exc is not None:
            exc = node.exc
            name = _src(exc.func if isinstance(exc, ast.Call) else exc)
            msg = _src(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else ""
            if name in ("ValueError", "NotImplementedError", "RuntimeError", "AssertionError", "TypeError"):
                self._add(f"raise {name}", node, "", msg)
        self.generic_visit(node)

    def _add(self, kind: str, node: ast.AST, test: str, message: str) -> None:
        self.found.append({"module": self.module, "function": ".".join(self.scope), "kind": kind,
                           "context": list(self.context), "test": test, "message": message,
                           "line": node.lineno})  # type: ignore[attr-defined]


def _src(node: ast.AST) -> str:
    return re.sub(r"\s+", " ", ast.unparse(node)).strip()


def topics(check: dict) -> list[str]:
    text = " ".join([check["test"], check["message"], *check["context"]])
    return [name for name, pattern in TOPICS if re.search(pattern, text, re.IGNORECASE)]


def key(check: dict) -> str:
    """What a check says, without its line: equal across betas when the check did not change."""
    return "|".join([check["module"], check["function"], check["kind"], " && ".join(check["context"]),
                     check["test"], check["message"]])


def read_wheel(path: Path) -> list[dict]:
    """Every support check of interface.py, and of the host-side validators of the modules beside it."""
    checks: list[dict] = []
    with zipfile.ZipFile(path) as wheel:
        names = sorted(n for n in wheel.namelist() if n.startswith("flash_attn/cute/") and n.endswith(".py"))
        for name in names:
            if SKIP_MODULES.search(name.rsplit("/", 1)[-1]):
                continue
            tree = ast.parse(wheel.read(name).decode("utf-8"), filename=name)
            visitor = _Checks(name, only_host=name != MODULE)
            visitor.visit(tree)
            checks.extend(visitor.found)
    for check in checks:
        check["topics"] = topics(check)
        check["key"] = key(check)
    return checks


def build(cache: Path, betas: list[int]) -> dict:
    wheels, per_beta = [], {}
    for beta in betas:
        path = download(cache, beta)
        wheels.append({"beta": beta, "version": f"4.0.0b{beta}", "wheel": path.name, "sha256": sha256(path),
                       "size": path.stat().st_size})
        per_beta[beta] = read_wheel(path)
    table: dict[str, dict] = {}
    for beta in betas:
        for check in per_beta[beta]:
            entry = table.setdefault(check["key"], {k: check[k] for k in (
                "module", "function", "kind", "context", "test", "message", "topics")} | {"lines": {}})
            entry["lines"].setdefault(str(beta), []).append(check["line"])
    checks = []
    for k, entry in table.items():
        present = sorted(int(b) for b in entry["lines"])
        entry["betas"] = _runs(present, betas)
        entry["id"] = hashlib.sha1(k.encode()).hexdigest()[:12]
        checks.append(entry)
    checks.sort(key=lambda e: (e["module"] != MODULE, e["module"], e["function"], min(int(b) for b in e["lines"]),
                               min(min(v) for v in e["lines"].values())))
    return {"package": PACKAGE, "read": "assert / raise statements (with their enclosing if-branches) of "
            f"{MODULE} and of {HOST_FUNCTIONS.pattern} in the other flash_attn/cute modules",
            "unpublished_betas": list(KNOWN_UNPUBLISHED), "wheels": wheels, "checks": checks}


def _runs(present: list[int], betas: list[int]) -> list[str]:
    """Contiguous runs of published betas, as '3-18' or '36'."""
    runs: list[list[int]] = []
    for b in betas:
        if b in present:
            if runs and betas.index(b) > 0 and runs[-1][-1] == betas[betas.index(b) - 1]:
                runs[-1].append(b)
            else:
                runs.append([b])
    return [f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs]


def diff_report(data: dict, betas: list[int]) -> str:
    """Added and removed checks between consecutive published betas, with module:line."""
    lines = ["# flash-attn-4: support checks added and removed between consecutive published betas", "",
             f"Read by tools/fa4/fa4_checks.py from the PyPI wheels ({data['read']}). A check is its function, its "
             "enclosing if-branches, its test and its message; a check that moved keeps its key, a reworded one reads "
             "as removed and added. Wheels and sha256 are listed at the end.", ""]
    by_beta: dict[int, set[str]] = {b: set() for b in betas}
    for check in data["checks"]:
        for b in check["lines"]:
            by_beta[int(b)].add(check["id"])
    index = {c["id"]: c for c in data["checks"]}
    for prev, cur in zip(betas, betas[1:]):
        added = sorted(by_beta[cur] - by_beta[prev], key=lambda i: (index[i]["module"], index[i]["lines"][str(cur)][0]))
        removed = sorted(by_beta[prev] - by_beta[cur],
                         key=lambda i: (index[i]["module"], index[i]["lines"][str(prev)][0]))
        lines.append(f"## 4.0.0b{prev} -> 4.0.0b{cur}: {len(added)} added, {len(removed)} removed")
        lines.append("")
        for sign, ids, beta in (("+", added, cur), ("-", removed, prev)):
            for i in ids:
                c = index[i]
                where = f"{c['module']}:{c['lines'][str(beta)][0]}"
                ctx = f" [if {' and '.join(c['context'])}]" if c["context"] else ""
                body = c["test"] + (f" -> {c['message']}" if c["message"] else "")
                lines.append(f"- {sign} `{where}` {c['function']} {c['kind']}{ctx}: `{_short(body)}` "
                             f"({', '.join(c['topics']) or 'other'})")
        lines.append("")
    lines.append("## Wheels read")
    lines.append("")
    for w in data["wheels"]:
        lines.append(f"- {w['wheel']} sha256 {w['sha256']}")
    return "\n".join(lines) + "\n"


def _short(text: str, limit: int = 400) -> str:
    text = text.replace("`", "'")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/work/cache/fa4", type=Path)
    parser.add_argument("--out", default=Path(__file__).parent / "out", type=Path)
    parser.add_argument("--offline", action="store_true", help="read only the wheels already in the cache")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.offline:
        betas = sorted(int(m.group(1)) for p in args.cache.glob("flash_attn_4-4.0.0b*-py3-none-any.whl")
                       if (m := re.search(r"4\.0\.0b(\d+)-", p.name)))
    else:
        betas = published_betas()
    data = build(args.cache, betas)
    (args.out / "checks.json").write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    (args.out / "DIFF.md").write_text(diff_report(data, betas))
    print(f"{len(betas)} wheels (4.0.0b{betas[0]}..4.0.0b{betas[-1]}), {len(data['checks'])} distinct checks -> "
          f"{args.out}/checks.json, {args.out}/DIFF.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
