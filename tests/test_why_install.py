"""`why` joined with the broken-install findings read from the ELF fixtures (tests/fixtures/elf): an error the
installed binaries explain ranks that finding first, with its fix; one they do not explain keeps its own cause."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest

from attndoctor.engine.install import environment_dict
from attndoctor.environment import Environment
from attndoctor.probe.binaries import probe_binaries
from attndoctor.why.service import explain_text

from conftest import fake_probe
from test_binaries import fake_distribution

ELF = Path(__file__).parent / "fixtures" / "elf"
STALE_SYMBOL = "_ZN3c1010TensorImpl18set_storage_offsetEl"
NO_KERNEL = ("Traceback (most recent call last):\n  File \"/venv/lib/python3.12/site-packages/flash_attn/"
             "flash_attn_interface.py\", line 91, in _flash_attn_forward\n    out, softmax_lse, S_dmask, rng_state = "
             "flash_attn_2_cuda.fwd(\nRuntimeError: CUDA error: no kernel image is available for execution on the "
             "device\n")
UNDEFINED = ("ImportError: /venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: "
             f"undefined symbol: {STALE_SYMBOL}\n")
SOFTCAP = "TypeError: _flash_attn_forward() missing 1 required positional argument: 'softcap'\n"


def make_site(root: Path, flash_so: str) -> None:
    """A site-packages with flash-attn 2.8.3 (its extension is `flash_so`) and torch 2.9.0 (libc10 exports the fake
    torch symbols; libtorch_cuda.so carries SASS sm80 and sm90)."""
    dist = functools.partial(fake_distribution, root)
    dist("flash_attn", "2.8.3", {"flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so": ELF / flash_so})
    dist("torch", "2.9.0", {"torch/lib/libc10.so": ELF / "libfaketorch.so",
                            "torch/lib/libtorch_cuda.so": ELF / "ext_ok.so"})


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Install a site (flash-attn's extension given) on sys.path and read its binaries as the probe does."""
    def make(flash_so: str) -> list[dict]:
        site = tmp_path / flash_so.replace(".", "_")
        make_site(site, flash_so)
        monkeypatch.setattr(sys, "path", [str(site), *sys.path])
        return probe_binaries(use_cache=False)
    return make


def machine(binaries: list[dict], gpu: str) -> Environment:
    from attndoctor.environment import environment_from_flags

    env = environment_from_flags({"gpu": gpu, "torch": "2.9.0", "flash_attn": "2.8.3"})
    env.source, env.binaries = "probe", binaries
    return env


def test_no_kernel_image_from_flash_attn_ranks_its_arch_finding_first(installed):
    got = explain_text(NO_KERNEL, base_env=machine(installed("ext_ok.so"), "RTX 5090"))
    first = got.candidates[0]
    assert first.kind == "install" and got.cause == first
    assert "flash-attn 2.8.3 carries no sm120 kernels" in first.cause
    assert any("FLASH_ATTN_CUDA_ARCHS=120" in f for f in first.fixes)
    # torch's own libtorch_cuda.so lacks sm120 too: a finding, but the text's error comes from flash_attn_2_cuda
    torch = next(c for c in got.candidates if c.kind == "install" and "PyTorch" in c.cause)
    assert torch.score < first.score


def test_undefined_symbol_ranks_the_matching_abi_finding_first(installed):
    got = explain_text(UNDEFINED, base_env=machine(installed("ext_stale.so"), "H100"))
    first = got.candidates[0]
    assert first.kind == "install" and got.cause == first
    assert f"undefined symbol: {STALE_SYMBOL}" in first.cause
    assert any("torch 2.9.0" in f and "--no-build-isolation" in f for f in first.fixes)


def test_a_finding_the_text_does_not_show_is_listed_but_not_the_cause(installed):
    got = explain_text(SOFTCAP, base_env=machine(installed("ext_stale.so"), "RTX 5090"))
    assert got.cause is not None and got.cause.id == "FA-MISSING-POSITIONAL"
    assert any(c.kind == "install" for c in got.candidates)
    assert all(c.score < got.cause.score for c in got.candidates if c.kind == "install")


def test_an_unreadable_extension_explains_an_import_error(tmp_path):
    from attndoctor.probe.binaries import TorchExports, read_binary

    entry = {"package": "flash_attn", "label": "flash-attn", "version": "2.8.3",
             "file": "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so",
             **read_binary(str(ELF / "ext_truncated.so"), TorchExports([str(ELF / "libfaketorch.so")]))}
    text = ("ImportError: /venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: "
            "file too short\n")
    got = explain_text(text, base_env=machine([entry], "H100"))
    assert got.cause is not None and got.cause.kind == "install"
    assert any("--force-reinstall" in f for f in got.cause.fixes)


def test_cli_here_passes_the_probes_findings(cli, monkeypatch, installed):
    env = fake_probe(monkeypatch, gpu="RTX5090", torch="2.9.0", flash_attn="2.8.3")
    env.binaries = installed("ext_ok.so")
    code, out, _ = cli("why", "--here", NO_KERNEL, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["cause"]["kind"] == "install"
    assert "carries no sm120 kernels" in doc["cause"]["cause"]
    assert any("FLASH_ATTN_CUDA_ARCHS=120" in f for f in doc["cause"]["fixes"])


def test_cli_env_file_binaries_are_judged_for_the_gpu_given(cli, tmp_path, installed):
    env = machine(installed("ext_ok.so"), "A100")
    path = tmp_path / "a100.json"
    path.write_text(json.dumps({"environment": environment_dict(env)}))
    code, out, _ = cli("why", "--env-file", str(path), "--gpu", "RTX5090", NO_KERNEL, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["cause"]["kind"] == "install" and "sm120" in doc["cause"]["cause"]
    code, out, _ = cli("why", "--env-file", str(path), NO_KERNEL, "--format", "json")
    doc = json.loads(out)
    assert all(c["kind"] != "install" for c in doc["candidates"])
