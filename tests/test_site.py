"""`attndoctor rules site`: the site builds, its links resolve, every rule has a page, and the picker answers as
`explain` does, read from the data the page uses and from the page itself in a headless Chromium."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from attndoctor.engine.rules import load_rulebase
from attndoctor.gpus import gpu_catalogue
from attndoctor.site import lattice

SAMPLE = 30
SHOT_SETTINGS = {
    "H100": "gpu=H100&stack=newest&dtype=bf16&mode=train&hdim=128&feature=none",
    "RTX4090": "gpu=RTX%204090&stack=newest&dtype=bf16&mode=train&hdim=128&feature=none",
}
MORE_SETTINGS = ("gpu=B200&stack=2024&dtype=fp8&mode=inference&hdim=192&feature=gqa",
                 "gpu=A100&stack=newest&dtype=fp16&mode=train&hdim=256&feature=window")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from attndoctor.cli import main

    out = tmp_path_factory.mktemp("site")
    with pytest.raises(SystemExit) as info:
        main(["rules", "site", "--output", str(out)])
    assert info.value.code == 0
    return out


def site_data(site: Path) -> dict:
    text = (site / "assets" / "data.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("=") + 1:].strip().rstrip(";"))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def test_every_link_resolves(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    base = load_rulebase(None)
    assert len(pages) >= len(base.rules) + len(base.backend_ids) + len({g.sm for g in gpu_catalogue()})
    broken = []
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("#"):
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {link}")
    assert broken == []


def test_every_rule_and_advisory_has_its_page(site: Path) -> None:
    base = load_rulebase(None)
    missing = [r.id for r in base.rules if not (site / "rules" / f"{r.id}.html").is_file()]
    assert missing == []
    advisories = (site / "advisories.html").read_text(encoding="utf-8")
    assert [r.id for r in base.rules if r.advisory and f'href="rules/{r.id}.html"' not in advisories] == []
    for b in base.backend_ids:
        assert (site / "backends" / f"{b}.html").is_file()
    assert {p.name for p in (site / "arch").glob("sm*.html")} == {f"sm{g.sm}.html" for g in gpu_catalogue()}
    page = (site / "rules" / "TE-FUSED-SEQ64-CUDNN8.html").read_text(encoding="utf-8")
    assert "source" in page and "symptom" in page or "message" in page
    index = (site / "assets" / "search-index.js").read_text(encoding="utf-8")
    assert all(f'"{r.id}"' in index for r in base.rules)


def _lookup(data: dict, gpu: str, stack: str, dtype: str, mode: str, hdim: int, feature: str) -> dict[str, dict]:
    sm = next(g.sm for g in gpu_catalogue() if g.name == gpu)
    cls = next(i for i, group in enumerate(data["classes"]) if sm in group)
    index = lattice.table_index(data, cls, dtype, mode, hdim, feature, stack)
    out = {}
    for backend, *_ in data["backends"]:
        status, why, _fix = data["verdicts"][lattice.decode(data["tables"][backend])[index]]
        out[backend] = {"status": data["statuses"][status],
                        "reason": [[data["rules"][r], data["messages"][m]] for r, m in why]}
    return out


def _explained(explain, args: list[str]) -> dict[str, dict]:
    doc = explain(*args)
    return {v["backend"]: {"status": v["status"], "reason": lattice.reason(v)} for v in doc["results"][0]["verdicts"]}


def test_picker_data_matches_explain(site: Path, explain) -> None:
    data = site_data(site)
    rng = random.Random(25)
    names = [g.name for g in gpu_catalogue()]
    points = [("H100 SXM", "newest", "bf16", "train", 128, "none"), ("RTX 4090", "newest", "bf16", "train", 128, "none")]
    while len(points) < SAMPLE:
        points.append((rng.choice(names), rng.choice([k for k, _, _ in lattice.STACKS]), rng.choice(lattice.DTYPES),
                       rng.choice([m for m, _ in lattice.MODES]), rng.choice(lattice.HDIMS),
                       rng.choice([k for k, _, _ in lattice.FEATURES])))
    for point in points:
        got = _lookup(data, *point)
        want = _explained(explain, lattice.explain_args(*point))
        assert got == want, point
    statuses = {v["status"] for p in points for v in _lookup(data, *p).values()}
    assert {"supported", "unsupported"} <= statuses


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _dump(browser: str, url: str, profile: Path, extra: tuple[str, ...] = ()) -> tuple[str, str]:
    proc = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
                           "--v=0", f"--user-data-dir={profile}", "--virtual-time-budget=5000", *extra,
                           "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _page_errors(dom: str, log: str) -> list[str]:
    box = re.search(r'<pre id="page-errors"[^>]*>(.*?)</pre>', dom, re.S)
    errors = [box.group(1).strip()] if box and box.group(1).strip() else []
    errors += [line for line in log.splitlines() if "CONSOLE" in line and re.search(r"Uncaught|Error|error", line)]
    return errors


def _rows(dom: str) -> dict[str, str]:
    return dict(re.findall(r'<tr class="[^"]*" data-backend="([^"]+)" data-status="([^"]+)"', dom))


@pytest.fixture(scope="module")
def browser() -> str:
    found = _chromium()
    if found is None:
        if os.environ.get("ATTNDOCTOR_REQUIRE_BROWSER") == "1":
            pytest.fail("ATTNDOCTOR_REQUIRE_BROWSER=1 but neither chromium nor chromium-browser is on PATH")
        pytest.skip("no chromium or chromium-browser on PATH: the browser tests need Debian's chromium")
    return found


def test_picker_in_chromium_matches_explain(site: Path, browser: str, explain, tmp_path: Path) -> None:
    shots = Path(os.environ.get("ATTNDOCTOR_SITE_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    index = (site / "index.html").as_uri()
    for name, fragment in [*SHOT_SETTINGS.items(), *((f"more{i}", f) for i, f in enumerate(MORE_SETTINGS))]:
        dom, log = _dump(browser, f"{index}#{fragment}", tmp_path / "profile")
        assert _page_errors(dom, log) == [], fragment
        s = dict(p.split("=") for p in fragment.split("&"))
        gpu = unquote(s["gpu"])
        want = _explained(explain, lattice.explain_args(gpu, s["stack"], s["dtype"], s["mode"], int(s["hdim"]),
                                                        s["feature"]))
        assert _rows(dom) == {b: v["status"] for b, v in want.items()}, fragment
        if name in SHOT_SETTINGS:
            shot = shots / f"picker-{name}.png"
            subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={tmp_path / 'p2'}",
                            "--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1400,1250",
                            f"--screenshot={shot}", f"{index}#{fragment}"], capture_output=True, timeout=120)
            assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_other_pages_load_in_chromium(site: Path, browser: str, tmp_path: Path) -> None:
    dom, log = _dump(browser, (site / "search.html").as_uri() + "#q=softcap", tmp_path / "profile")
    assert _page_errors(dom, log) == []
    assert len(re.findall(r'<li><a href="rules/', dom)) > 3
    for page in ("plots.html", "rules/TE-FUSED-SEQ64-CUDNN8.html", "matrix/H100.html", "arch/sm90.html",
                 "releases/torch-2.5.0.html", "backends/te-fused.html"):
        dom, log = _dump(browser, (site / page).as_uri(), tmp_path / "profile")
        assert _page_errors(dom, log) == [], page
        assert "<h1>" in dom


def test_output_onto_a_file_is_a_usage_error(cli, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    code, out, err = cli("rules", "site", "--output", str(target))
    assert code == 2 and "not a folder" in err and "Traceback" not in err
