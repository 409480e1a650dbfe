"""List the GPU names NVIDIA's driver gives its products that the catalogue (attndoctor/data/gpus.toml) does not
resolve, so a catalogue update starts from the driver's own list.

The names are those of the "Compatible GPUs" table of NVIDIA/open-gpu-kernel-modules README.md (Turing and later),
the names NVML and nvidia-smi report. Usage:

    git -C open-gpu-kernel-modules show 595.44.03:README.md > README.md
    python tools/gpus/nvml_names.py README.md            # names not resolved, one a line
    python tools/gpus/nvml_names.py README.md --all      # every name and the entry it resolves to
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROW = re.compile(r"^\|\s*(?P<name>(?:NVIDIA|Tesla|Quadro)[^|]*?)\s*\|\s*[0-9A-F]{4}\b")


def driver_names(readme: str) -> list[str]:
    """The product names of the README's table, in table order, each once."""
    seen: dict[str, None] = {}
    for line in readme.splitlines():
        match = ROW.match(line)
        if match:
            seen.setdefault(match.group("name"), None)
    return list(seen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("--all", action="store_true", help="print every name with the entry it resolves to")
    args = parser.parse_args(argv)
    from attndoctor.gpus import lookup_gpu

    names = driver_names(args.readme.read_text(encoding="utf-8"))
    missing = 0
    for name in names:
        spec = lookup_gpu(name)
        missing += spec is None
        if args.all:
            print(f"{name}\t{spec.name if spec else '-'}\t{spec.sm if spec else '-'}")
        elif spec is None:
            print(name)
    print(f"{len(names)} names, {len(names) - missing} resolved", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
