"""A fixed corpus of commands whose output bytes a refactor must not change: record once, compare after.

Run: python tools/same_bytes.py record FILE   (the digests of every command's exit code, stdout and stderr)
     python tools/same_bytes.py compare FILE  (exit 1 and the commands that differ, else 0)
     python tools/same_bytes.py list          (the commands)
Commands run as `python -m attndoctor ...` in a subprocess with a fixed environment (no cache, no colour, 100
columns), so the figures are the bytes a user gets. The 20,000-config run uses benchmarks/scale.py's realistic sweep;
`@replay` prints every recorded GPU observation replayed against the rules.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
H100 = ["--gpu", "H100", "--torch", "2.11.0", "--cudnn", "9.19.0"]
FIXTURES = ROOT / "tests" / "fixtures"
OBSERVATIONS = ROOT / "tests" / "observations"


def commands(scratch: Path) -> list[list[str]]:
    """The corpus: every command's formats, rule listings, models, why, the recorded GPU runs replayed."""
    sweep = scratch / "configs.jsonl"
    if not sweep.exists():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from scale import write_configs

        write_configs(sweep, 20000)
    out: list[list[str]] = []
    base = ["explain", "--hdim", "192", "--hdim-v", "128", "--heads", "128", "--seqlen", "4096", "--dtype", "bf16",
            "--train", "--causal"]
    for fmt in ("text", "json", "jsonl", "junit", "sarif", "github"):
        out.append(base + H100 + ["--format", fmt])
    out += [
        ["explain", "--hdim", "192", "--train", "--gpu", "H100", "--cudnn", "9.1.0"],
        ["explain", "--hdim", "256", "--train", "--gpu", "B200", "--flash-attn-4", "4.0.0b20"],
        ["explain", "--hdim", "128", "--window", "4096,0", "--softcap", "50", "--gpu", "RTX 4090", "--torch", "2.11"],
        ["explain", "--hdim", "64", "--gpu", "T4", "--flash-attn", "2.8.3", "--format", "json"],
        ["explain", "--hdim", "128", "--train", "--backend", "te-fused", "--te", "2.5", "--gpu", "H100"],
        ["explain", "--hdim", "128", "--train", "--backend", "flash-attn-4"],
        ["explain", "--config-file", str(sweep), "--format", "jsonl"] + H100,
        ["explain", "--config-file", str(sweep), "--format", "text"] + H100,
        ["rules", "list"], ["rules", "list", "--advisories"], ["rules", "list", "--format", "json"],
        ["rules", "lint"], ["rules", "show", "ADV-SDPA-CUDNN-FP32-MASK-REINTERPRETED"],
        ["rules", "matrix", "--gpu", "H100 SXM", "--format", "markdown"],
        ["rules", "matrix", "--gpu", "B200", "--format", "json"],
        ["why", "RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "--gpu", "T4"],
        ["why", "No available kernel. Aborting execution.", "--format", "json"] + H100,
        ["why", "ImportError: flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
                "_ZN3c104cuda9SetDeviceEi"],
        ["explain", "--help"], ["why", "--help"], ["rules", "list", "--help"], ["--help"],
        ["explain", "--hdim", "7"], ["explain", "--gpu", "nonesuch", "--hdim", "64"],
    ]
    for model in sorted(p for p in (FIXTURES / "models").iterdir() if (p / "config.json").exists()):
        config = str((model / "config.json").relative_to(ROOT))
        out.append(["explain", "--model", config, "--seqlen", "8192", "--train"] + H100)
        out.append(["explain", "--model", config, "--format", "json"] + H100)
    out.append(["@replay"])
    return out


REPLAY = ("import pathlib, sys; from attndoctor.runs.verification import replay\n"
          "files = sorted(pathlib.Path(sys.argv[1]).glob('*.jsonl'))\n"
          "for r in replay(files): print(r.disagrees, r.describe())")


def run(args: list[str]) -> dict:
    """The digests of one command's exit code, stdout and stderr, as a user's shell would see them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNDOCTOR", "NVTE_", "CUDNN_", "TORCH_CUDNN"))}
    env.update(NO_COLOR="1", COLUMNS="100", ATTNDOCTOR_NO_CACHE="1", PYTHONHASHSEED="0", LC_ALL="C.UTF-8")
    argv = ["-c", REPLAY, str(OBSERVATIONS.relative_to(ROOT))] if args == ["@replay"] else ["-m", "attndoctor", *args]
    proc = subprocess.run([sys.executable, *argv], capture_output=True, env=env, cwd=ROOT,
                          timeout=600)
    return {"exit": proc.returncode, "stdout": hashlib.sha256(proc.stdout).hexdigest(),
            "stderr": hashlib.sha256(proc.stderr).hexdigest(), "bytes": len(proc.stdout)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("record", "compare", "list"))
    parser.add_argument("file", nargs="?")
    ns = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(Path(tmp))
        if ns.mode == "list":
            print("\n".join(" ".join(c).replace(tmp, "$TMP") for c in cmds))
            return 0
        if not ns.file:
            parser.error("record and compare take a FILE")
        keys = [" ".join(c).replace(tmp, "$TMP") for c in cmds]
        got = {}
        for i, (key, cmd) in enumerate(zip(keys, cmds), 1):
            print(f"[{i}/{len(cmds)}] {key[:110]}", file=sys.stderr)
            got[key] = run(cmd)
    if ns.mode == "record":
        Path(ns.file).write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
        return 0
    want = json.loads(Path(ns.file).read_text(encoding="utf-8"))
    differ = [k for k in want if want[k] != got.get(k)]
    for k in differ:
        print(f"DIFFERS: {k}\n  before {want[k]}\n  after  {got.get(k)}")
    new = [k for k in got if k not in want]
    print(f"{len(want) - len(differ)} of {len(want)} recorded commands give the same bytes"
          + (f"; {len(new)} not recorded before" if new else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
