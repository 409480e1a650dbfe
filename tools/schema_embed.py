"""Copy report-v1.json into why-v1.json's $defs, so the why schema validates alone (`jsonschema.validate(doc, schema)`).

The why document reuses report-v1's config, environment and result by `$ref` to urn:attndoctor:report:v1; an embedded
schema resource with that `$id` lets any 2020-12 validator resolve them without a registry built by hand. Run after
changing report-v1.json: `python tools/schema_embed.py` (`--check` exits 1 when why-v1.json is out of date).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "attndoctor" / "schema"
KEY = "report-v1"


def embedded() -> str:
    """why-v1.json as it should be, with the current report-v1.json in $defs."""
    report = json.loads((DIR / "report-v1.json").read_text(encoding="utf-8"))
    why = json.loads((DIR / "why-v1.json").read_text(encoding="utf-8"))
    report.pop("$schema", None)  # the embedding schema's dialect applies
    why.setdefault("$defs", {})[KEY] = report
    return json.dumps(why, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    path = DIR / "why-v1.json"
    text = embedded()
    if "--check" in argv:
        if path.read_text(encoding="utf-8") != text:
            print(f"{path}: report-v1.json changed; run python tools/schema_embed.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
