"""Copy report-v1.json into the $defs of every schema that refers to it, so each validates alone
(`jsonschema.validate(doc, schema)`).

why-v1.json, verify-v1.json, bench-v1.json and the others reuse report-v1's config, environment, selection and fix by
`$ref` to urn:attndoctor:report:v1; an embedded schema resource with that `$id` lets any 2020-12 validator resolve
them without a registry built by hand. Run after changing any schema: `python tools/schema_embed.py` (`--check` exits 1
when one is out of date).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "attndoctor" / "schema"
KEY = "report-v1"
URN = "urn:attndoctor:report:v1"


def embedding() -> list[Path]:
    """The schemas that refer to report-v1."""
    return sorted(p for p in DIR.glob("*-v1.json") if p.name != f"{KEY}.json" and URN + "#" in p.read_text("utf-8"))


def embedded(path: Path) -> str:
    """The schema at `path` as it should be, with the current report-v1.json in $defs."""
    report = json.loads((DIR / f"{KEY}.json").read_text(encoding="utf-8"))
    schema = json.loads(path.read_text(encoding="utf-8"))
    report.pop("$schema", None)  # the embedding schema's dialect applies
    schema.setdefault("$defs", {})[KEY] = report
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    stale = []
    for path in embedding():
        text = embedded(path)
        if path.read_text(encoding="utf-8") == text:
            continue
        if "--check" in argv:
            stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"{', '.join(stale)}: report-v1.json changed; run python tools/schema_embed.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
