"""The probe never imports torch into the doctor's own process (a fresh interpreter tells for sure)."""

from __future__ import annotations

import subprocess
import sys


def test_probe_does_not_import_torch_in_process():
    code = ("import sys; from attndoctor.probe import probe; probe(timeout=20); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_explain_does_not_import_torch():
    code = ("import sys\nfrom attndoctor.cli import main\n"
            "try:\n    main(['explain', '--hdim', '128', '--gpu', 'H100', '--format', 'json'])\n"
            "except SystemExit:\n    pass\nprint('torch' in sys.modules, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stderr.strip().splitlines()[-1] == "False", out.stderr
