"""Broken installs read from real ELF files (tests/fixtures/elf, made by make.sh there): GPU archs of the device code,
torch symbols that do not resolve, damaged files; and the same read on a real torch wheel when one is installed."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from attndoctor.environment import Environment, environment_from_flags
from attndoctor.probe import binaries
from attndoctor.probe.binaries import TorchExports, probe_binaries, read_binary, torch_library_paths
from attndoctor.engine.install import binary_findings, environment_dict, install_findings
from attndoctor.report.text import environment_lines

from conftest import fake_probe
from test_json_schema import check

ELF = Path(__file__).parent / "fixtures" / "elf"
FAKE_TORCH = TorchExports([str(ELF / "libfaketorch.so")])
STALE_SYMBOL = "_ZN3c1010TensorImpl18set_storage_offsetEl"


def fake_distribution(root: Path, name: str, version: str, files: dict[str, Path]) -> None:
    """An installed distribution in the site-packages `root`: its METADATA, a RECORD listing `files`, and the files
    (copied from the ELF fixtures)."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{rel},," for rel in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    for rel, src in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, root / rel)


def entry(fixture: str, package: str = "flash_attn", label: str = "flash-attn", version: str = "2.7.4") -> dict:
    return {"package": package, "label": label, "version": version, "file": "flash_attn_2_cuda.cpython-312.so",
            "path": str(ELF / fixture), **read_binary(str(ELF / fixture), FAKE_TORCH)}


def _findings(entry: dict, **judged) -> list[dict]:
    """The findings as `binaries[].findings` lists them."""
    return [f.to_dict() for f in binary_findings(entry, **judged)]


def test_the_fatbinary_gives_sass_and_ptx_archs_apart():
    ok = read_binary(str(ELF / "ext_ok.so"), FAKE_TORCH)
    stale = read_binary(str(ELF / "ext_stale.so"), FAKE_TORCH)
    assert (ok["sass"], ok["ptx"], ok["device_code"], ok["error"]) == ([80, 90], [], True, None)
    assert (stale["sass"], stale["ptx"]) == ([80], [90])
    torch_lib = read_binary(str(ELF / "libfaketorch.so"), None)
    assert (torch_lib["device_code"], torch_lib["sass"], torch_lib["abi"]) == (False, [], None)


def test_a_wheel_without_sm120_kernels_is_named_with_its_archs_and_the_fix():
    found = _findings(entry("ext_ok.so"), sm=120, gpu="RTX 5090", torch_version="2.9.0")
    assert [f["kind"] for f in found] == ["arch"]
    f = found[0]
    assert f["severity"] == "error"
    assert f["message"].startswith("flash-attn 2.7.4 carries no sm120 kernels (SASS sm80, sm90; PTX none")
    assert "no kernel image is available for execution on the device' on RTX 5090 (sm120)" in f["message"]
    assert "FLASH_ATTN_CUDA_ARCHS=120" in f["fix"] and "--no-build-isolation" in f["fix"]


@pytest.mark.parametrize("sm", [80, 86, 90])
def test_machine_code_of_the_family_runs(sm):
    assert _findings(entry("ext_ok.so"), sm=sm, gpu=None) == []


def test_ptx_alone_runs_through_the_jit_and_says_so():
    found = _findings(entry("ext_stale.so"), sm=100, gpu="B200")
    arch = [f for f in found if f["kind"] == "arch"]
    assert len(arch) == 1 and arch[0]["severity"] == "warning"
    assert "compiles its PTX at first use" in arch[0]["message"]
    assert not [f for f in _findings(entry("ext_stale.so"), sm=86, gpu=None) if f["kind"] == "arch"]


def test_a_wheel_built_against_another_torch_shows_the_unresolved_symbol():
    stale = read_binary(str(ELF / "ext_stale.so"), FAKE_TORCH)
    assert stale["abi"] == "unresolved"
    assert stale["unresolved"] == [STALE_SYMBOL] and stale["unresolved_count"] == 1
    # the C++ name is read with the symbol (c++filt runs here, on the probe's side), so judging it runs nothing
    assert stale["unresolved_demangled"] == (["c10::TensorImpl::set_storage_offset(long)"] if shutil.which("c++filt")
                                             else [STALE_SYMBOL])
    assert read_binary(str(ELF / "ext_ok.so"), FAKE_TORCH)["abi"] == "ok"
    found = [f for f in _findings(entry("ext_stale.so"), sm=90, gpu="H100", torch_version="2.9.0")
             if f["kind"] == "abi"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert "built against another torch" in found[0]["message"]
    assert f"undefined symbol: {STALE_SYMBOL}" in found[0]["message"]
    if shutil.which("c++filt"):
        assert "c10::TensorImpl::set_storage_offset(long)" in found[0]["message"]
    assert "torch 2.9.0" in found[0]["fix"] and "--no-build-isolation" in found[0]["fix"]


def test_no_torch_libraries_leaves_the_abi_unknown_not_ok():
    assert read_binary(str(ELF / "ext_stale.so"), TorchExports([]))["abi"] == "unknown"


def test_damaged_files_are_reported_not_raised(tmp_path):
    (tmp_path / "empty.so").write_bytes(b"")
    (tmp_path / "cut_fatbin.so").write_bytes(_cut_fatbin())
    for path in (ELF / "ext_truncated.so", ELF / "make.sh", tmp_path / "empty.so", tmp_path / "cut_fatbin.so",
                 tmp_path / "missing.so"):
        facts = read_binary(str(path), FAKE_TORCH)
        assert facts["error"], path
        found = _findings({"package": "xformers", "label": "xformers", "version": "0.0.35",
                                "file": path.name, **facts}, sm=90, gpu="H100")
        assert [f["kind"] for f in found] == ["unreadable"]
        assert "pip install --force-reinstall --no-deps xformers" == found[0]["fix"]


def _cut_fatbin() -> bytes:
    """ext_ok.so with its fatbinary's size field claiming more than the section holds."""
    from elftools.elf.elffile import ELFFile

    raw = bytearray((ELF / "ext_ok.so").read_bytes())
    with open(ELF / "ext_ok.so", "rb") as f:
        at = ELFFile(f).get_section_by_name(".nv_fatbin")["sh_offset"]
    raw[at + 8:at + 16] = (1 << 40).to_bytes(8, "little")
    return bytes(raw)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site-packages with flash-attn 2.7.4 built against another torch and a torch whose libtorch_cuda.so
    carries sm80 and sm90, found through their distributions' RECORD files."""
    dist = functools.partial(fake_distribution, tmp_path)
    dist("flash_attn", "2.7.4", {"flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so": ELF / "ext_stale.so",
                                  "flash_attn/__init__.py": ELF / "make.sh"})
    dist("torch", "2.9.0", {"torch/lib/libc10.so": ELF / "libfaketorch.so",
                            "torch/lib/libtorch_cuda.so": ELF / "ext_ok.so"})
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    return tmp_path


def test_the_probe_finds_extensions_through_distribution_files(site):
    found = {e["package"]: e for e in probe_binaries(use_cache=False)}
    assert set(found) == {"flash_attn", "torch"}
    flash, torch = found["flash_attn"], found["torch"]
    assert (flash["version"], flash["sass"], flash["ptx"], flash["abi"]) == ("2.7.4", [80], [90], "unresolved")
    assert flash["file"] == "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"
    assert (torch["file"], torch["sass"], torch["abi"]) == ("libtorch_cuda.so", [80, 90], None)

    env = Environment(source="probe", gpu="RTX 5090", sm=120, versions={"torch": "2.9.0"},
                      binaries=probe_binaries(use_cache=False))
    doc = environment_dict(env)
    kinds = {(e["package"], f["kind"], f["severity"]) for e in doc["binaries"] for f in e["findings"]}
    assert kinds == {("flash_attn", "arch", "warning"), ("flash_attn", "abi", "error"), ("torch", "arch", "error")}
    assert any(n["kind"] == "binary" and "torch 2.9.0 does not export" in n["message"] for n in doc["notes"])
    text = "\n".join(line.plain for line in environment_lines(env))
    assert ("binary flash-attn 2.7.4 flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: SASS sm80, PTX sm90; "
            "torch symbols UNRESOLVED (1)") in text
    assert "binary PyTorch 2.9.0 libtorch_cuda.so: SASS sm80 sm90, PTX none" in text
    assert {(f.package, f.kind) for f in install_findings(env)} == {
        ("flash_attn", "arch"), ("flash_attn", "abi"), ("torch", "arch")}


def test_the_cache_answers_while_the_files_are_unchanged(site, monkeypatch):
    first = probe_binaries()
    calls = []
    monkeypatch.setattr(binaries, "read_binary", lambda *a: calls.append(a) or {})
    assert probe_binaries() == first and calls == []
    so = site / "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"
    shutil.copyfile(ELF / "ext_ok.so", so)
    os.utime(so, ns=(1, 1))
    probe_binaries()
    assert [os.path.basename(a[0]) for a in calls] == [so.name]


def test_check_json_carries_the_binaries_and_the_schema_describes_them(cli, monkeypatch, site):
    env = fake_probe(monkeypatch, gpu="RTX5090", flash_attn="2.7.4")
    env.binaries = probe_binaries(use_cache=False)
    code, out, _ = cli("check", "--format", "json", "--hdim", "128", "--heads", "8", "--seqlen", "512",
                       "--dtype", "bf16")
    doc = json.loads(out)
    check(doc)
    flash = next(b for b in doc["environment"]["binaries"] if b["package"] == "flash_attn")
    assert {f["kind"] for f in flash["findings"]} == {"arch", "abi"}


def test_an_env_file_judged_on_another_gpu_gets_findings_for_that_gpu(tmp_path, site):
    env = Environment(source="probe", gpu="A100", sm=80, versions={"torch": "2.9.0"},
                      binaries=probe_binaries(use_cache=False))
    assert not [f for f in install_findings(env) if f.kind == "arch"]
    path = tmp_path / "a100.json"
    path.write_text(json.dumps({"environment": environment_dict(env)}))
    from attndoctor.services import whatif_environment

    there = whatif_environment({"gpu": "RTX5090"}, env_file=str(path))
    assert there.sm == 120
    assert {(f.package, f.kind) for f in install_findings(there) if f.kind == "arch"} == {
        ("flash_attn", "arch"), ("torch", "arch")}
    assert any("carries no sm120 kernels" in n["message"] for n in environment_dict(there)["notes"])


def test_an_environment_without_binaries_reads_back_without_them():
    env = environment_from_flags({"gpu": "H100"})
    assert "binaries" not in env.to_dict()


@pytest.mark.skipif(not torch_library_paths(), reason="no torch wheel installed")
def test_the_installed_torch_wheel_reads_without_errors():
    libs = torch_library_paths()
    for path in libs:
        facts = read_binary(path, TorchExports([p for p in libs if p != path]))
        assert facts["error"] is None, (path, facts["error"])
        assert facts["abi"] in ("ok", "no-torch-symbols"), (path, facts)
    python = [p for p in libs if p.endswith("libtorch_python.so")]
    if python:
        assert read_binary(python[0], TorchExports([p for p in libs if p != python[0]]))["abi"] == "ok"
        assert read_binary(python[0], TorchExports([str(ELF / "libfaketorch.so")]))["abi"] == "unresolved"
    for e in probe_binaries(use_cache=False):
        assert e["error"] is None, e


def test_a_whatif_on_an_env_file_judges_its_binaries_on_the_whatif_gpu_as_read(tmp_path, site):
    """The env file's binaries are held as the probe read them; their findings follow from them, the what-if GPU
    and torch when asked, with nothing patched into the environment."""
    from attndoctor.engine.install import InstallKind, environment_dict, install_findings
    from attndoctor.environment import load_env_file
    from attndoctor.services import whatif_environment

    read = Environment(source="probe", gpu="A100", sm=80, versions={"torch": "2.9.0"},
                       binaries=probe_binaries(use_cache=False))
    written = environment_dict(read)  # as `check --format json` writes it: findings and binary notes included
    assert all("findings" in b for b in written["binaries"])
    path = tmp_path / "a100.json"
    path.write_text(json.dumps({"environment": written}))

    as_read = load_env_file(str(path))
    assert as_read.binaries == read.binaries and all("findings" not in b for b in as_read.binaries)
    assert not [n for n in as_read.notes if n.get("kind") == "binary"]
    assert {(f.package, f.kind) for f in install_findings(as_read)} == {("flash_attn", InstallKind.ABI)}

    there = whatif_environment({"gpu": "RTX5090"}, env_file=str(path))
    assert there == environment_from_flags({"gpu": "RTX5090"}, base=as_read)
    assert all("findings" not in b for b in there.binaries)
    assert {(f.package, f.kind, f.severity) for f in install_findings(there)} == {
        ("flash_attn", InstallKind.ARCH, "warning"), ("flash_attn", InstallKind.ABI, "error"),
        ("torch", InstallKind.ARCH, "error")}
    doc = environment_dict(there)
    torch_entry = next(b for b in doc["binaries"] if b["package"] == "torch")
    assert [f["kind"] for f in torch_entry["findings"]] == ["arch"]
    assert any("carries no sm120 kernels" in n["message"] for n in doc["notes"] if n["kind"] == "binary")
    text = "\n".join(line.plain for line in environment_lines(there))
    assert "error: PyTorch 2.9.0 carries no sm120 kernels" in text


@pytest.mark.parametrize("field, value", [("sass", "80"), ("unresolved_count", "many"), ("unresolved", [1]),
                                          ("device_code", "yes")])
def test_an_env_file_binary_the_findings_cannot_read_is_one_usage_error(tmp_path, field, value):
    from attndoctor.environment import load_env_file
    from attndoctor.errors import UsageError

    entry = {"package": "flash_attn", "label": "flash-attn", "abi": "unresolved", "unresolved": ["_Zx"],
             "unresolved_count": 1, "sass": [80], "ptx": [], "device_code": True, field: value}
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"environment": {"gpu": "H100", "binaries": [entry]}}))
    with pytest.raises(UsageError, match=rf"binaries\[0\]\.{field}: unexpected value"):
        load_env_file(str(path))
