"""Reads every configured source at each release, extracts messages, dedupes them and writes the index."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections import defaultdict

from packaging.version import InvalidVersion, Version

from . import compiled, extract_cpp, extract_py, native
from .model import FACT_FIELDS, entry_id, module_named, pattern_of, skip_reason, template_of
from .sources import CACHE, MIRROR, SOURCES, backends_for

LIBRARIES = ["pytorch", "inductor", "flash-attn", "flash-attn-3", "flash-attn-4", "transformer-engine",
             "cudnn-frontend", "transformers", "diffusers", "vllm", "sglang", "flashinfer", "xformers",
             "sageattention", "jax", "llamafactory", "megatron", "ms-swift", "unsloth", "axolotl", "tgi", "natten", "kernels", "triton",
             "llama-cpp", "cuda", "loader"]


def tag_version(tag: str) -> str:
    """Releases are versions, compared with packaging, whatever the tag spelling."""
    t = re.sub(r"^(fa4-|core_)", "", tag)
    t = t.lstrip("v")
    t = t.replace(".beta", "b")
    return str(Version(t))


def _git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True, check=True).stdout


def _blobs(gitdir: str, ref: str, paths: list) -> dict:
    """One cat-file process reads every file of a release (hundreds of git calls would be slow)."""
    if not paths:
        return {}
    proc = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "--batch"],
                          input="".join(f"{ref}:{p}\n" for p in paths).encode(), capture_output=True, check=True)
    out = proc.stdout
    res = {}
    pos = 0
    for p in paths:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode()
        pos = nl + 1
        if header.endswith("missing"):
            continue
        size = int(header.split()[2])
        res[p] = out[pos:pos + size].decode("utf-8", "replace")
        pos += size + 1
    return res


def _wanted(src: dict, path: str) -> bool:
    return any(re.search(rx, path) for rx in src["include"])


def read_git(src: dict):
    """Yield (ref label, release, path, text) for each wanted file at each tag of a fetched repository."""
    gitdir = os.path.join(MIRROR, src["git"], "repo")
    if not os.path.isdir(gitdir):
        print(f"missing repository snapshot {gitdir}", file=sys.stderr)
        return
    for ref in src["refs"]:
        try:
            names = _git(gitdir, "ls-tree", "-r", "--name-only", ref).splitlines()
        except subprocess.CalledProcessError:
            print(f"{src['repo']}: no tag {ref}", file=sys.stderr)
            continue
        wanted = [n for n in names if _wanted(src, n)]
        for path, text in sorted(_blobs(gitdir, ref, wanted).items()):
            yield ref, tag_version(ref), path, text


def _wheel_version(name: str) -> str:
    return name.split("-")[1]


def read_wheels(src: dict):
    """Yield (ref label, release, path, text) for each wanted file of each cached wheel or source distribution."""
    files = sorted(glob.glob(os.path.join(CACHE, "wheels", src["wheels"], "*.whl")))
    for whl in files:
        base = os.path.basename(whl)
        version = str(Version(_wheel_version(base)))
        dist = base.split("-")[0].replace("_", "-")
        with zipfile.ZipFile(whl) as z:
            for path in sorted(z.namelist()):
                if _wanted(src, path):
                    yield f"wheel:{dist}-{version}", version, path, z.read(path).decode("utf-8", "replace")
    for sdist in sorted(glob.glob(os.path.join(CACHE, "wheels", src["wheels"], "*.tar.gz"))):
        base = os.path.basename(sdist)[:-len(".tar.gz")]
        version = str(Version(base.rsplit("-", 1)[1]))
        dist = base.rsplit("-", 1)[0].replace("_", "-")
        with tarfile.open(sdist) as t:
            members = {m.name.split("/", 1)[1]: m for m in t if m.isfile() and "/" in m.name}
            for path in sorted(members):
                if _wanted(src, path):
                    text = t.extractfile(members[path]).read().decode("utf-8", "replace")
                    yield f"sdist:{dist}-{version}", version, path, text


def read_tarballs(src: dict):
    """Yield (ref label, release, path, text) for each wanted file of each cached Debian source tarball."""
    for tb in sorted(glob.glob(os.path.join(CACHE, src["tarballs"]))):
        base = os.path.basename(tb)
        package, upstream = base.split(".orig.")[0].split("_", 1)
        version = str(Version(upstream.split("+")[0]))
        with tarfile.open(tb) as t:
            for member in t:
                if not member.isfile():
                    continue
                path = member.name.split("/", 1)[1] if "/" in member.name else member.name
                if _wanted(src, path):
                    text = t.extractfile(member).read().decode("utf-8", "replace")
                    yield f"debsrc:{package}-{upstream}", version, path, text


def _scope_ok(src: dict, path: str, raw) -> bool:
    for rx, fn in src.get("scope", {}).items():
        if re.search(rx, path):
            return any(fn.search(s) for s in raw.scope)
    return True


def _text_ok(src: dict, path: str, template: str) -> bool:
    for rx, tx in src.get("text", {}).items():
        if re.search(rx, path):
            return bool(tx.search(template))
    return True


def _vendored_copy(src: dict, path: str, raw, idx: "Index") -> bool:
    """A library's copy of another's code (SGLang's flash-attn 4) adds only the messages it changed."""
    for rx, original in src.get("vendored", {}).items():
        if re.search(rx, path):
            eid = entry_id(original, template_of(raw.parts))
            return eid in idx.entries or eid in idx.kept_ids
    return False


class Index:
    def __init__(self):
        self.entries: dict = {}
        self.skipped: dict = defaultdict(lambda: defaultdict(int))
        self.read: dict = defaultdict(list)
        self.kept_ids: set = set()
        """Ids of the messages of libraries a run with --only leaves as they are (for the vendored-copy check)."""

    def note_read(self, library: str, repo: str, ref: str, path: str, release: str = ""):
        self.read[library].append((repo, ref, path, release))

    def add(self, library: str, repo: str, ref: str, release: str, path: str, raw, not_facts=frozenset()):
        reason = skip_reason(raw.parts)
        if reason:
            self.skipped[library][reason] += 1
            return None
        template = template_of(raw.parts)
        eid = entry_id(library, template)
        source = {"repo": repo, "path": path, "ref": ref, "line": raw.line}
        e = self.entries.get(eid)
        if e is None:
            pattern, facts = pattern_of(raw.parts)
            facts = {group: fact for group, fact in facts.items() if group not in not_facts}
            e = {
                "id": eid, "library": library, "kind": raw.kind, "template": template, "pattern": pattern,
                "facts": facts, "condition": raw.condition,
                "backend": backends_for(library, path, template, raw.scope),
                "_sources": [], "releases": set(), "text": raw.text,
            }
            self.entries[eid] = e
        e["_sources"].append((release, source, raw))
        e["releases"].add(release)
        return e

    def finish(self) -> dict:
        """One entry per template: every release, the first and the last source, the latest wording of the check."""
        by_lib: dict = defaultdict(list)
        for e in self.entries.values():
            srcs = sorted(e.pop("_sources"), key=lambda s: (_vkey(s[0]), s[1]["ref"], s[1]["path"], s[1]["line"]))
            first, last = srcs[0], srcs[-1]
            e["_files"] = {(s[1]["repo"], s[1]["path"]) for s in srcs if s[0] == last[0]}
            e["sources"] = [first[1]] if first[1] == last[1] else [first[1], last[1]]
            e["condition"] = last[2].condition
            if last[2].trigger:
                e["trigger"] = True
            e["kind"] = last[2].kind
            e["text"] = last[2].text
            e["releases"] = sorted(e["releases"], key=_vkey)
            assert all(v in FACT_FIELDS for v in e["facts"].values())
            by_lib[e["library"]].append(e)
        self._retire(by_lib)
        return by_lib

    def _retire(self, by_lib: dict) -> None:
        """`retired`: the first release read after a message's last one whose same file no longer prints it, unless
        another message of the library carries the same check there (a rewording)."""
        read: dict = defaultdict(set)
        for library, rows in self.read.items():
            for repo, _ref, path, release in rows:
                read[library, repo, path].add(release)
        for library, entries in by_lib.items():
            checks: dict = defaultdict(set)
            for e in entries:
                if e["condition"]:
                    checks[e["condition"]].update(e["releases"])
            for e in entries:
                last = _vkey(e["releases"][-1])
                later = sorted({r for f in e.pop("_files") for r in read[library, *f] if r and _vkey(r) > last},
                               key=_vkey)
                if later and later[0] not in checks.get(e["condition"], ()):
                    e["retired"] = later[0]


def _vkey(v: str):
    try:
        return (0, Version(v))
    except InvalidVersion:
        return (1, v)


ORDER = ["id", "library", "kind", "template", "pattern", "facts", "condition", "trigger", "backend", "sources", "releases",
         "retired",
         "text"]


def _previous(out_dir: str) -> dict:
    """INDEX.json's libraries as the last build wrote them ({} where there is none or it does not read)."""
    try:
        with open(os.path.join(out_dir, "INDEX.json"), encoding="utf-8") as fh:
            return dict(json.load(fh).get("libraries") or {})
    except (OSError, ValueError, AttributeError):
        return {}


def _refs(summary: dict) -> set:
    return {(r["repo"], r["ref"]) for r in summary.get("read", ())}


def run(out_dir: str, only: tuple = ()) -> int:
    names = [src["name"] for src in SOURCES]
    unknown = [name for name in only if name not in names]
    if unknown:
        print(f"tools.messages.build: unknown source {unknown[0]!r}; the sources are {', '.join(names)}", file=sys.stderr)
        return 2
    previous = _previous(out_dir)
    idx = Index()
    if only:
        for path in glob.glob(os.path.join(out_dir, "*.jsonl")):
            with open(path, encoding="utf-8") as fh:
                idx.kept_ids.update(json.loads(line)["id"] for line in fh if line.strip())
    memo: dict = {}
    for src in SOURCES:
        if only and src["name"] not in only:
            continue
        reader = read_git if "git" in src else read_tarballs if "tarballs" in src else read_wheels
        files = reader(src)
        macros: dict = {}
        asserts: dict = {}
        if src.get("check_macros"):
            files = list(files)
            for ref, _, path, text in files:
                if not path.endswith(".py"):
                    macros.setdefault(ref, {}).update(extract_cpp.check_macros(text))
                    asserts.setdefault(ref, {}).update(extract_cpp.printed_asserts(text))
        n = 0
        for ref, release, path, text in files:
            library = src["library"](path, ref)
            if library is None:
                continue
            n += 1
            idx.note_read(library, src["repo"], ref, path, release)
            extractor = extract_py if path.endswith(".py") else extract_cpp
            prints = bool(src.get("prints")) and extractor is extract_py
            reasons = bool(src.get("reasons")) and extractor is extract_py
            stringizing = bool(src.get("stringizing")) and extractor is extract_cpp
            known = macros.get(ref, {}) if extractor is extract_cpp else {}
            printed = asserts.get(ref, {}) if extractor is extract_cpp else {}
            key = (extractor.__name__, prints, reasons, stringizing, repr(sorted(known.items())),
                   repr(sorted(printed.items())), hashlib.sha1(text.encode("utf-8", "replace")).hexdigest())
            if key not in memo:
                options = {name: True for name, on in (("prints", prints), ("reasons", reasons), ("stringizing", stringizing))
                           if on}
                memo[key] = extractor.extract(text, **options, **({"macros": known} if known else {}),
                                              **({"asserts": printed} if printed else {}))
            raws, skipped = memo[key]
            for k, v in skipped.items():
                idx.skipped[library][k] += v
            for raw in raws:
                named = module_named(raw.parts, path) if path.endswith(".py") else raw.parts
                raw = raw if named is raw.parts else dataclasses.replace(raw, parts=named)
                if not _scope_ok(src, path, raw):
                    idx.skipped[library]["outside the attention functions of a shared file"] += 1
                    continue
                if library == "cudnn-frontend" and raw.kind == "log" and not re.search(
                        r"sdpa|scaled_dot_product|attention", path + template_of(raw.parts), re.I):
                    idx.skipped[library]["progress log of a non-attention graph node"] += 1
                    continue
                if not _text_ok(src, path, template_of(raw.parts)):
                    idx.skipped[library]["not about attention (shared file)"] += 1
                    continue
                if _vendored_copy(src, path, raw, idx):
                    idx.skipped[library]["a vendored copy's message the original library prints too"] += 1
                    continue
                idx.add(library, src["repo"], ref, release, path, raw, src.get("not_facts", frozenset()))
        print(f"{src['name']}: {n} files", file=sys.stderr)
        if only and not n:
            print(f"tools.messages.build: {src['name']} read no file (is its wheel, tarball or repository snapshot in "
                  f"{CACHE} / {MIRROR}? tools/messages/download.sh fills the cache); nothing written", file=sys.stderr)
            return 2
    _compiled_wordings(idx)
    for library, repo, ref, release, path, raw in () if only else native.read_all(CACHE):
        idx.note_read(library, repo, ref, path, release)
        idx.add(library, repo, ref, release, path, raw)
    by_lib = idx.finish()
    rebuilt = set(idx.read) | set(by_lib)
    lost = {library: _refs(previous.get(library, {})) - {(r, f) for r, f, _p, _v in idx.read.get(library, ())}
            for library in rebuilt} if only else {}
    for library, refs in sorted(lost.items()):
        if refs:
            print(f"tools.messages.build: {library} was read at {', '.join(sorted(f for _r, f in refs))} too, which "
                  "--only did not read: name all of its sources, or fill the cache; nothing written", file=sys.stderr)
            return 2
    os.makedirs(out_dir, exist_ok=True)
    for library in LIBRARIES:
        path = os.path.join(out_dir, f"{library}.jsonl")
        if library in rebuilt and os.path.exists(path):
            os.remove(path)
        elif library not in rebuilt and os.path.exists(path) and not only:
            print(f"{library}: no source of it was read; its messages of the last build are kept", file=sys.stderr)
    summary = {"generated": datetime.date.today().isoformat(), "generator": "tools/messages", "libraries": {}}
    for library in LIBRARIES:
        if library not in rebuilt:
            if library in previous and os.path.exists(os.path.join(out_dir, f"{library}.jsonl")):
                summary["libraries"][library] = previous[library]
            continue
        entries = sorted(by_lib.get(library, []), key=lambda e: e["id"])
        if entries:
            with open(os.path.join(out_dir, f"{library}.jsonl"), "w", encoding="utf-8") as fh:
                for e in entries:
                    fh.write(json.dumps({k: e[k] for k in ORDER if k in e}, ensure_ascii=False, sort_keys=False) + "\n")
        reads = defaultdict(lambda: defaultdict(set))
        for repo, ref, path, _release in idx.read.get(library, []):
            reads[repo][ref].add(path)
        summary["libraries"][library] = {
            "count": len(entries),
            "read": [{"repo": repo, "ref": ref, "paths": sorted(paths)}
                     for repo in sorted(reads) for ref, paths in sorted(reads[repo].items(), key=lambda kv: _vkey(_ref_version(kv[0])))],
            "skipped": dict(sorted(idx.skipped.get(library, {}).items())),
        }
        print(f"{library}: {len(entries)} entries", file=sys.stderr)
    with open(os.path.join(out_dir, "INDEX.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1, sort_keys=False)
        fh.write("\n")
    return 0


COMPILED_PATH = "torch/lib/libtorch_{cpu,cuda}"


def _compiled_wordings(idx: Index) -> None:
    """Other releases of PyTorch's C++ messages, from their wheels' libraries (tools/messages/compiled.py)."""
    sources = [(e, e["_sources"][-1][2].parts) for e in idx.entries.values() if e["library"] == "pytorch"
               and any(s[1]["ref"].startswith("debsrc:") for s in e["_sources"])]
    n = 0
    for (e, own), release, ref, parts in compiled.variants(sources, CACHE):
        added = idx.add("pytorch", "pytorch/pytorch", ref, release, COMPILED_PATH, compiled.raw_of(e, parts or own))
        if added is not None and parts is not None:
            n += added is not e and len(added["_sources"]) == 1
            added["backend"] = e["backend"]
    print(f"compiled wordings: {n} other wordings", file=sys.stderr)


def _ref_version(ref: str) -> str:
    if ref.startswith(("wheel:", "sdist:")):
        return ref.rsplit("-", 1)[-1]
    if ref.startswith(("deb:", "debsrc:")):
        return ref.split(":", 1)[1].split("-", 1)[1].split("+")[0]
    try:
        return tag_version(ref)
    except InvalidVersion:
        return ref


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Rebuild attndoctor/data/messages from upstream sources.")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "attndoctor", "data", "messages"))
    ap.add_argument("--only", action="append", default=[], metavar="SOURCE[,SOURCE]",
                    help="rebuild only the libraries these sources (sources.py's names) produce, leaving the others")
    args = ap.parse_args(argv)
    only = tuple(name for value in args.only for name in value.split(",") if name)
    return run(os.path.normpath(args.out), only)


if __name__ == "__main__":
    sys.exit(main())
