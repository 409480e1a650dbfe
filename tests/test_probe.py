"""The probe: faked NVML, faked packages on a temporary site dir, broken and hanging imports, AST API facts.

No GPU and no torch needed: fakes stand in for pynvml (in sys.modules) and for installed packages (a temporary
directory put both on sys.path, for metadata and find_spec, and on PYTHONPATH, for the probe's subprocesses).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

TORCH_BEFORE = "torch" in sys.modules
"""Another test module (preflight) may have imported torch first; then the probe cannot be blamed for it."""
import textwrap
import time
import types
from pathlib import Path
from typing import Any

import pytest

import attndoctor.probe as probe_pkg
from attndoctor.environment import ABSENT, Environment, environment_from_dict
from attndoctor.probe import probe
from attndoctor.probe._run import last_meaningful_line, run_python
from attndoctor.probe.api import api_facts, function_parameters, locate_flash_attn_interface
from attndoctor.probe.cudnn_lib import cudnn_version_text, probe_cudnn_library, site_cudnn_libraries
from attndoctor.probe.envvars import relevant_env_vars
from attndoctor.probe.packages import check_import, package_versions
from attndoctor.probe import torch_info
from attndoctor.gpus import arch_supported


# --- fixtures -------------------------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CUDA_VISIBLE_DEVICES", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)


class Site:
    """A temporary site-packages: packages and .dist-info metadata the probe will find."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def module(self, relpath: str, source: str = "") -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    def dist(self, name: str, version: str, files: tuple[str, ...] = ()) -> None:
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", str(root))
    _hide_real_torch(monkeypatch, root)
    return Site(root)


def _hide_real_torch(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """The fake site decides about torch: a torch installed in the test interpreter is hidden unless faked there."""
    from attndoctor.probe import packages, torch_info

    real_version, real_present = packages.distribution_version, packages.module_present

    def version(*names: str) -> str | None:
        if "torch" in names and not any(root.glob("torch-*.dist-info")):
            return None
        return real_version(*names)

    def present(name: str) -> bool:
        if name == "torch" and not (root / "torch").exists():
            return False
        return real_present(name)

    monkeypatch.setattr(packages, "distribution_version", version)
    monkeypatch.setattr(packages, "module_present", present)
    monkeypatch.setattr(torch_info, "torch_installed", lambda: (root / "torch").exists())


def fake_nvml(monkeypatch: pytest.MonkeyPatch, devices: list[dict[str, Any]], *, driver: str = "570.124.06",
              cuda: int = 12080, init_error: str | None = None) -> None:
    """Put a pynvml look-alike in sys.modules; a device is {name, cc, mem, uuid, mig}; cc None makes it raise."""
    mod = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def init() -> None:
        if init_error:
            raise NVMLError(init_error)

    def capability(handle: dict) -> tuple[int, int]:
        if handle.get("cc") is None:
            raise NVMLError("Not Supported")
        return handle["cc"]

    mod.NVMLError = NVMLError  # type: ignore[attr-defined]
    mod.NVML_DEVICE_MIG_ENABLE = 1  # type: ignore[attr-defined]
    mod.nvmlInit = init  # type: ignore[attr-defined]
    mod.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    mod.nvmlDeviceGetCount = lambda: len(devices)  # type: ignore[attr-defined]
    mod.nvmlDeviceGetHandleByIndex = lambda i: devices[i]  # type: ignore[attr-defined]
    mod.nvmlDeviceGetName = lambda h: h["name"]  # type: ignore[attr-defined]
    mod.nvmlDeviceGetCudaComputeCapability = capability  # type: ignore[attr-defined]
    mod.nvmlDeviceGetMemoryInfo = (  # type: ignore[attr-defined]
        lambda h: types.SimpleNamespace(total=h.get("mem", 80 << 30)))
    mod.nvmlDeviceGetMigMode = lambda h: (1 if h.get("mig") else 0, 0)  # type: ignore[attr-defined]
    mod.nvmlDeviceGetUUID = lambda h: h.get("uuid", "GPU-0000")  # type: ignore[attr-defined]
    mod.nvmlSystemGetDriverVersion = lambda: driver  # type: ignore[attr-defined]
    mod.nvmlSystemGetCudaDriverVersion = lambda: cuda  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", mod)


H100 = {"name": "NVIDIA H100 80GB HBM3", "cc": (9, 0), "mem": 81559 << 20, "uuid": "GPU-aaaa"}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "mem": 81920 << 20, "uuid": "GPU-bbbb"}
RTX5090 = {"name": "NVIDIA GeForce RTX 5090", "cc": (12, 0), "mem": 32607 << 20, "uuid": "GPU-cccc"}


def fake_torch(site: Site, *, version: str = "2.5.1+cu124", cuda: str | None = "12.4", cudnn: int = 90100,
               arch: str = "sm_80 sm_86 sm_90", available: bool = False, capability: tuple[int, int] = (9, 0),
               device: str = "NVIDIA H100 80GB HBM3", fail: str | None = None, dist: bool = True) -> None:
    """A torch look-alike with the attributes the torch probe reads."""
    if dist:
        site.dist("torch", version.split("+")[0])
    if fail:
        site.module("torch/__init__.py", fail)
        return
    site.module("torch/__init__.py", f"""
        __version__ = {version!r}
        from . import version, backends, cuda, _C
    """)
    site.module("torch/version.py", f"cuda = {cuda!r}\nhip = None\n")
    site.module("torch/backends/__init__.py", "from . import cudnn\n")
    site.module("torch/backends/cudnn.py", f"""
        def is_available():
            return True
        def version():
            return {cudnn}
    """)
    site.module("torch/cuda.py", f"""
        def is_available():
            return {available}
        def get_device_capability(i):
            return {capability!r}
        def get_device_name(i):
            return {device!r}
    """)
    site.module("torch/_C.py", f"""
        class _cudnn:
            @staticmethod
            def getCompileVersion():
                return (9, 1, 0)
        def _cuda_getArchFlags():
            return {arch!r}
    """)


def notes_with(env: Environment, text: str, severity: str | None = None) -> list[dict]:
    return [n for n in env.notes if text in n["message"] and (severity is None or n["severity"] == severity)]


# --- the real machine -----------------------------------------------------------------------------------------

def _machine_has_nvml_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount() > 0
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001
        return False


def test_probe_on_this_machine_finds_no_gpu_quickly() -> None:
    if _machine_has_nvml_gpu():
        pytest.skip("this machine has an NVIDIA GPU")
    start = time.monotonic()
    env = probe()
    elapsed = time.monotonic() - start
    assert env.source == "probe"
    assert env.gpu is None and env.sm is None
    assert env.no_gpu is True
    assert notes_with(env, "no NVIDIA GPU found", "info")
    if env.versions.get("torch") == ABSENT:
        assert elapsed < 3.0, f"the probe took {elapsed:.1f} s without torch"
    for fact in ("flash_attn", "flash_attn_3", "flash_attn_4", "cudnn_frontend", "te"):
        assert fact in env.versions
    assert all(set(n) == {"kind", "severity", "message"} for n in env.notes)
    # what the probe writes, `--env-file` reads back
    assert environment_from_dict(env.to_dict()).to_dict() == env.to_dict()


# --- NVML -----------------------------------------------------------------------------------------------------

def test_fake_nvml_two_h100(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100, dict(H100, uuid="GPU-aaab")])
    env = probe(timeout=10)
    assert env.gpu == "H100 SXM"
    assert env.sm == 90
    assert env.no_gpu is False
    assert [g.index for g in env.gpus] == [0, 1]
    assert env.gpus[0].name == "NVIDIA H100 80GB HBM3" and env.gpus[0].memory_mib == 81559
    assert env.versions["driver"] == "570.124.06"
    assert notes_with(env, "NVIDIA driver 570.124.06 (runs CUDA up to 12.8)", "info")
    assert not notes_with(env, "mixed")


def test_fake_nvml_mixed_models_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100, A100])
    env = probe(timeout=10)
    assert (env.gpu, env.sm) == ("H100 SXM", 90)
    (warning,) = notes_with(env, "mixed GPU models", "warning")
    assert "A100" in warning["message"] and "sm80" in warning["message"]


def test_cuda_visible_devices_picks_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100, A100])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    env = probe(timeout=10)
    assert (env.gpu, env.sm) == ("A100 80GB", 80)
    assert [g.index for g in env.gpus] == [1]
    assert notes_with(env, "shows 1 of the 2 GPUs", "info")
    assert not notes_with(env, "mixed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa")
    assert probe(timeout=10).gpu == "H100 SXM"


def test_cuda_visible_devices_empty_hides_every_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    env = probe(timeout=10)
    assert env.gpu is None and env.no_gpu is True
    assert notes_with(env, "CUDA_VISIBLE_DEVICES", "info")


def test_unknown_gpu_keeps_the_nvml_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [{"name": b"NVIDIA CMP 30HX", "cc": (7, 5), "uuid": "GPU-dddd"}])
    env = probe(timeout=10)
    assert (env.gpu, env.sm) == ("NVIDIA CMP 30HX", 75)


def test_capability_from_the_catalogue_when_nvml_cannot_say(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [dict(H100, cc=None)])
    env = probe(timeout=10)
    assert (env.gpu, env.sm) == ("H100 SXM", 90)
    assert env.gpus[0].sm is None


def test_mig_mode_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [dict(A100, mig=True)])
    env = probe(timeout=10)
    assert env.gpus[0].mig is True
    assert notes_with(env, "MIG mode", "info")


def test_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [])
    env = probe(timeout=10)
    assert env.gpu is None and env.sm is None and env.no_gpu is True
    assert notes_with(env, "no NVIDIA GPU found", "info")


def test_nvml_init_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100], init_error="Driver Not Loaded")
    env = probe(timeout=10)
    assert env.gpu is None and env.no_gpu is True
    assert notes_with(env, "no NVIDIA GPU found (NVML: Driver Not Loaded)", "info")


def test_hanging_nvml_becomes_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = types.ModuleType("pynvml")
    mod.nvmlInit = lambda: time.sleep(30)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    start = time.monotonic()
    env = probe(timeout=1.5)
    assert time.monotonic() - start < 4
    assert notes_with(env, "'nvml' did not finish", "warning")
    assert env.gpu is None and env.no_gpu is False  # unknown, not known absent


# --- package versions, imports ----------------------------------------------------------------------------------

def test_versions_come_from_metadata_and_imports_are_checked(site: Site) -> None:
    site.dist("flash-attn", "2.6.3")
    site.module("flash_attn/__init__.py", "__version__ = '2.6.3'\n")
    site.dist("nvidia-cudnn-frontend", "1.32.0")
    site.module("cudnn/__init__.py")
    site.dist("transformer-engine", "2.8.0")
    site.module("transformer_engine/__init__.py")
    site.module("transformer_engine/pytorch/__init__.py")
    env = probe(timeout=15)
    assert env.versions["flash_attn"] == "2.6.3"
    assert env.versions["cudnn_frontend"] == "1.32.0"
    assert env.versions["te"] == "2.8.0"
    assert env.versions["flash_attn_3"] == ABSENT
    assert env.versions["flash_attn_4"] == ABSENT
    assert env.versions["torch"] == ABSENT
    assert env.import_errors == {}


def test_package_versions_alone(site: Site) -> None:
    site.dist("flash-attn-4", "4.0.0b36")
    env = package_versions()
    assert env.versions["flash_attn_4"] == "4.0.0b36"
    assert env.versions["flash_attn"] == ABSENT


# --- flash_attn.cute before the flash-attn-4 betas ----------------------------------------------------------

PREVIEW_NOTE = "flash_attn.cute comes with {}, the preview before the flash-attn-4 betas"


def cute_tree(site: Site, init: str = "raise RuntimeError('the probe imported flash_attn')\n") -> None:
    """flash_attn/cute as flash-attn 2.8.3 ships it; flash_attn's own __init__ must not run while versions are read."""
    site.module("flash_attn/__init__.py", init)
    site.module("flash_attn/cute/__init__.py", "from .interface import flash_attn_func\n")
    site.module("flash_attn/cute/interface.py", "def flash_attn_func(*args, **kwargs):\n    pass\n")


def test_flash_attn_2_8_3_carries_the_cute_preview(site: Site) -> None:
    site.dist("flash-attn", "2.8.3")
    cute_tree(site)
    env = package_versions()
    assert env.versions["flash_attn"] == "2.8.3"
    assert env.versions["flash_attn_4"] == "2.8.3"
    (n,) = notes_with(env, PREVIEW_NOTE.format("flash-attn 2.8.3"), "info")
    assert "older than every beta the rules model" in n["message"]
    assert "flash_attn" not in sys.modules or not sys.modules["flash_attn"].__file__.startswith(str(site.root))


def test_a_local_label_is_left_as_env_file_reads_it_back(site: Site) -> None:
    site.dist("flash-attn", "2.8.3+cu12torch2.8cxx11abiFALSE")
    cute_tree(site)
    env = package_versions()
    assert env.versions["flash_attn_4"] == "2.8.3"
    assert environment_from_dict(env.to_dict()).versions["flash_attn_4"] == "2.8.3"


def test_flash_attn_without_cute_leaves_flash_attn_4_absent(site: Site) -> None:
    site.dist("flash-attn", "2.8.2")
    site.module("flash_attn/__init__.py")
    site.module("flash_attn/cute/interface.py")  # v2.8.2 has flash_attn/cute but no __init__.py: not packaged
    env = package_versions()
    assert env.versions["flash_attn_4"] == ABSENT
    assert not notes_with(env, "flash_attn.cute")


def test_the_flash_attn_cute_distribution(site: Site) -> None:
    site.dist("flash-attn-cute", "0.1.0")
    site.module("flash_attn/cute/__init__.py")  # installed on its own: flash_attn is a namespace package
    env = package_versions()
    assert env.versions["flash_attn_4"] == "0.1.0"
    assert env.versions["flash_attn"] == ABSENT
    assert notes_with(env, PREVIEW_NOTE.format("flash-attn-cute 0.1.0"), "info")


def test_the_flash_attn_cute_placeholder_holds_no_flash_attn_cute(site: Site) -> None:
    site.dist("flash-attn-cute", "0.0.1")
    (site.root / "flash_attn_cute-0.0.1.dist-info" / "top_level.txt").write_text("flash_attn_cute\n")
    site.module("flash_attn_cute/__init__.py", '__version__ = "0.0.1"\n')
    env = package_versions()
    assert env.versions["flash_attn_4"] == ABSENT
    assert notes_with(env, "flash-attn-cute 0.0.1 is installed but holds no flash_attn.cute", "info")
    site.dist("flash-attn", "2.8.3")
    cute_tree(site)
    assert package_versions().versions["flash_attn_4"] == "2.8.3"


def test_a_flash_attn_4_beta_wins_over_the_preview(site: Site) -> None:
    site.dist("flash-attn", "2.8.3")
    site.dist("flash-attn-4", "4.0.0b36")
    cute_tree(site)
    env = package_versions()
    assert env.versions["flash_attn_4"] == "4.0.0b36"
    assert not notes_with(env, "preview")


def test_the_early_beta_name_flash_attn4(site: Site) -> None:
    site.dist("flash-attn4", "4.0.0b1")
    site.module("flash_attn/cute/__init__.py")
    assert package_versions().versions["flash_attn_4"] == "4.0.0b1"


def test_flash_attn_cute_without_metadata_has_an_unknown_version(site: Site) -> None:
    cute_tree(site)
    env = package_versions()
    assert "flash_attn_4" not in env.versions
    assert notes_with(env, "importable as flash_attn.cute but no package metadata names it", "info")


def test_looking_for_cute_never_raises(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    site.dist("flash-attn", "2.8.3")
    cute_tree(site)

    real = probe_pkg.packages.importlib.util.find_spec

    def boom(name: str, package: str | None = None) -> Any:
        if name == "flash_attn":
            raise RuntimeError("a broken finder")
        return real(name, package)

    monkeypatch.setattr(probe_pkg.packages.importlib.util, "find_spec", boom)
    assert package_versions().versions["flash_attn_4"] == ABSENT


def test_check_reads_flash_attn_2_8_3_as_the_preview_outside_the_rules(site: Site, monkeypatch: pytest.MonkeyPatch,
                                                                       cli, tmp_path: Path) -> None:
    fake_nvml(monkeypatch, [H100])
    fake_torch(site, version="2.8.0+cu128", cuda="12.8")
    site.dist("flash-attn", "2.8.3")
    cute_tree(site, "")
    config = ("--hdim", "128", "--dtype", "bf16")
    code, out, _ = cli("check", *config, "--no-cache", "--format", "json")
    doc = json.loads(out)
    environment = doc["environment"]
    assert environment["versions"]["flash_attn_4"] == "2.8.3"
    assert "flash_attn_4" not in environment["import_errors"]
    assert any(PREVIEW_NOTE.format("flash-attn 2.8.3") in n["message"] for n in environment["notes"])

    def fa4(document: dict) -> dict:
        (verdict,) = [v for v in document["results"][0]["verdicts"] if v["backend"] == "flash-attn-4"]
        return verdict

    verdict = fa4(doc)
    assert verdict["status"] == "outside-rules"
    (finding,) = [f for f in verdict["findings"] if f["rule"] == "AD-OUTSIDE-RULES"]
    assert "flash-attn 4 2.8.3 is older than every release the rules about flash-attn-4 were read at" in \
        finding["message"]

    code, text, _ = cli("check", *config, "--no-cache")
    assert PREVIEW_NOTE.format("flash-attn 2.8.3") in " ".join(text.split())
    (row,) = [line for line in text.splitlines() if line.startswith("flash-attn-4 ")]
    assert "outside the rules" in row

    env_file = tmp_path / "env.json"
    env_file.write_text(json.dumps(environment))
    code, out, _ = cli("explain", "--env-file", str(env_file), *config, "--format", "json")
    replay = json.loads(out)
    assert replay["environment"]["versions"]["flash_attn_4"] == "2.8.3"
    assert fa4(replay)["status"] == "outside-rules"
    assert [f["message"] for f in fa4(replay)["findings"]] == [f["message"] for f in verdict["findings"]]


def test_undefined_symbol_import_error(site: Site) -> None:
    site.dist("flash-attn", "2.7.4.post1")
    site.module("flash_attn/__init__.py", """
        import flash_attn.flash_attn_interface
    """)
    site.module("flash_attn/flash_attn_interface.py", """
        raise ImportError("/site/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: "
                          "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE")
    """)
    env = probe(timeout=15)
    error = env.import_errors["flash_attn"]
    assert error.startswith("ImportError: ") and "undefined symbol: _ZN3c105Error" in error
    (n,) = notes_with(env, "`import flash_attn` fails", "error")
    assert "flash-attn 2.7.4.post1" in n["message"] and "reinstall" in n["message"]
    assert env.versions["flash_attn"] == "2.7.4.post1"


def test_check_import_reports_a_crash(site: Site) -> None:
    site.module("cudnn/__init__.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    env = check_import("cudnn_frontend", "cudnn", 10, version="1.5.0")
    assert env.import_errors["cudnn_frontend"].startswith("crashed with SIGSEGV")
    assert notes_with(env, "cudnn-frontend 1.5.0 is installed", "error")


def test_hanging_import_times_out_and_the_probe_returns(site: Site) -> None:
    site.dist("transformer-engine", "2.8.0")
    site.module("transformer_engine/__init__.py", "import time\ntime.sleep(60)\n")
    start = time.monotonic()
    env = probe(timeout=2)
    elapsed = time.monotonic() - start
    assert elapsed < 6, f"the probe took {elapsed:.1f} s"
    assert notes_with(env, "import transformer_engine.pytorch did not finish", "warning")
    assert "te" not in env.import_errors
    assert env.versions["te"] == "2.8.0"


def test_flash_attn_3_without_metadata(site: Site) -> None:
    site.module("flash_attn_interface.py", "def flash_attn_func(q, k, v, softcap=0.0, window_size=(-1, -1)):\n"
                                           "    pass\n")
    env = probe(timeout=15)
    assert "flash_attn_3" not in env.versions  # installed, version unknown
    assert notes_with(env, "flash-attn 3 is importable as flash_attn_interface", "info")
    assert "flash_attn_3" not in env.import_errors
    assert env.api["flash_attn_3.flash_attn_func.softcap"] is True
    assert env.api["flash_attn_3.flash_attn_func.softcap.required"] is False


# --- torch ----------------------------------------------------------------------------------------------------

def test_torch_facts_through_a_subprocess(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100])
    fake_torch(site)
    env = probe(timeout=15)
    assert env.versions["torch"] == "2.5.1+cu124"
    assert env.versions["cuda"] == "12.4"
    assert env.versions["cudnn"] == "9.1.0"
    assert env.cudnn_compiled == "9.1.0"
    assert env.torch_arch_list == ["sm_80", "sm_86", "sm_90"]
    assert env.torch_cuda_available is False
    assert env.api["torch.arch_supported"] is True
    assert notes_with(env, "torch.cuda.is_available() is False although NVML sees 1 GPU:", "error")
    assert "torch" not in sys.modules or not hasattr(sys.modules["torch"], "_C") or TORCH_BEFORE, \
        "torch imported in-process"


def test_torch_build_facts_are_reused_while_torch_is_unchanged(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100])
    fake_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, available=True)
    first = probe(timeout=15)
    calls: list[str] = []
    real = torch_info.run_python
    monkeypatch.setattr(torch_info, "run_python", lambda *a, **k: calls.append("torch") or real(*a, **k))
    second = probe(timeout=15)
    assert calls == []
    for name in ("torch", "cuda", "cudnn"):
        assert second.versions[name] == first.versions[name]
    assert (second.cudnn_compiled, second.torch_arch_list) == (first.cudnn_compiled, first.torch_arch_list)
    assert second.api["torch.arch_supported"] is True
    assert second.torch_cuda_available is None  # a fact about the device, never taken from the cache
    assert notes_with(second, "this torch installation is unchanged since", "info")
    assert not notes_with(first, "unchanged since")

    probe(timeout=15, use_cache=False)
    assert calls == ["torch"]
    fake_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=92000, available=True, dist=False)  # reinstalled
    third = probe(timeout=15)
    assert calls == ["torch", "torch"]
    assert third.versions["cudnn"] == "9.20.0"


def test_torch_facts_are_not_cached_when_the_device_is_asked_or_the_import_fails(
        site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [], init_error="NVML Shared Library Not Found")
    fake_torch(site, available=True, capability=(8, 9), device="NVIDIA L40S")
    probe(timeout=15)
    assert (probe(timeout=15).gpu, len(notes_with(probe(timeout=15), "unchanged since"))) == ("L40S", 0)
    fake_nvml(monkeypatch, [H100])
    fake_torch(site, fail="raise ImportError('undefined symbol: _ZN3c10')\n", dist=False)
    probe(timeout=15)
    again = probe(timeout=15)
    assert "torch" in again.import_errors and not notes_with(again, "unchanged since")


def test_torch_without_kernels_for_this_gpu(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [RTX5090])
    fake_torch(site, arch="sm_50 sm_80 sm_86 sm_90")  # torch cu124 wheels: no PTX
    env = probe(timeout=15)
    assert env.sm == 120
    assert env.api["torch.arch_supported"] is False
    assert notes_with(env, "has no kernels for sm120", "error")


def test_torch_newer_cuda_than_the_driver(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [H100], cuda=12080)
    fake_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, available=True)
    env = probe(timeout=15)
    assert env.versions["cudnn"] == "9.19.0"
    assert notes_with(env, "built with CUDA 13.0 but driver 570.124.06 runs CUDA 12.8 at most", "error")


def test_gpu_through_torch_when_nvml_has_none(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [], init_error="NVML Shared Library Not Found")
    fake_torch(site, available=True, capability=(8, 9), device="NVIDIA L40S")
    env = probe(timeout=15)
    assert (env.gpu, env.sm) == ("L40S", 89)
    assert env.no_gpu is False
    assert env.torch_cuda_available is True


def test_cpu_only_torch(site: Site) -> None:
    fake_torch(site, version="2.5.1+cpu", cuda=None, arch="")
    env = probe(timeout=15)
    assert env.versions["torch"] == "2.5.1+cpu"
    assert env.versions["cuda"] == ABSENT
    assert notes_with(env, "CPU-only build", "warning")


def test_torch_that_fails_to_import(site: Site) -> None:
    fake_torch(site, fail="raise OSError('libcudart.so.12: cannot open shared object file: No such file or "
                          "directory')\n")
    env = probe(timeout=15)
    assert env.import_errors["torch"] == ("OSError: libcudart.so.12: cannot open shared object file: No such file "
                                          "or directory")
    assert env.versions["torch"] == "2.5.1"  # from its metadata
    assert notes_with(env, "torch 2.5.1 is installed but does not import", "error")


def test_torch_import_that_hangs(site: Site) -> None:
    fake_torch(site, fail="import time\ntime.sleep(60)\n")
    start = time.monotonic()
    env = probe(timeout=2)
    assert time.monotonic() - start < 6
    assert notes_with(env, "import torch did not finish", "warning")
    assert env.versions["torch"] == "2.5.1"
    assert "cuda" not in env.versions


@pytest.mark.parametrize("sm, arch, expected", [
    (90, ["sm_80", "sm_90"], True),
    (90, ["sm_80", "sm_86"], False),
    (86, ["sm_80"], True),  # same major, lower minor: the cubin runs
    (80, ["sm_86"], False),
    (90, ["sm_80", "compute_80"], True),  # PTX is JIT-compiled forward
    (90, ["sm_90a"], True),
    (100, ["sm_90a", "compute_90a"], False),  # arch-specific code runs on its own arch only
    (103, ["sm_100f"], True),
    (120, ["sm_80", "sm_90", "sm_100"], False),
    (120, ["sm_80", "compute_90"], True),
    (120, ["sm_120"], True),
    (90, [], None),
    (90, None, None),
])
def test_arch_supported(sm: int, arch: list[str] | None, expected: bool | None) -> None:
    assert arch_supported(sm, arch) is expected


# --- cuDNN without torch ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [(91900, "9.19.0"), (90100, "9.1.0"), (8907, "8.9.7"), (8600, "8.6.0"),
                                         (90501, "9.5.1")])
def test_cudnn_version_text(value: int, text: str) -> None:
    assert cudnn_version_text(value) == text


def _compile_fake_cudnn(target: Path, version: int) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a fake libcudnn")
    target.parent.mkdir(parents=True, exist_ok=True)
    src = target.parent / "fake_cudnn.c"
    src.write_text(f"#include <stddef.h>\nsize_t cudnnGetVersion(void) {{ return {version}; }}\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(target), str(src)], check=True, capture_output=True)


def test_cudnn_from_the_wheel_without_torch(site: Site) -> None:
    _compile_fake_cudnn(site.root / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", 91900)
    assert site_cudnn_libraries([str(site.root)]) == [str(site.root / "nvidia/cudnn/lib/libcudnn.so.9")]
    env = probe(timeout=15)
    assert env.versions["torch"] == ABSENT
    assert env.versions["cudnn"] == "9.19.0"
    assert notes_with(env, "cuDNN 9.19.0 from", "info")


def test_torch_cudnn_wins_over_the_library(site: Site) -> None:
    _compile_fake_cudnn(site.root / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", 91900)
    fake_torch(site, cudnn=90800)
    env = probe(timeout=15)
    assert env.versions["cudnn"] == "9.8.0"
    assert not notes_with(env, "cuDNN 9.19.0 from")


def test_broken_cudnn_library_is_unknown_not_absent(site: Site) -> None:
    from attndoctor.probe.cudnn_lib import site_cudnn_libraries

    site.module("nvidia/cudnn/lib/libcudnn.so.9", "not an ELF file\n")
    # Only the fake site's library: a cuDNN wheel installed beside torch (pip install torch brings one) is another
    # library, and the probe rightly reads that one.
    env = probe_cudnn_library(10, candidates=site_cudnn_libraries([str(site.root)]))
    if env.versions.get("cudnn") not in (None, ABSENT):
        pytest.skip("this machine has a cuDNN on its loader path")
    assert "cudnn" not in env.versions
    assert notes_with(env, "is there but does not load", "warning")


def test_no_cudnn_is_absent() -> None:
    env = probe_cudnn_library(10, candidates=[])
    # this machine has no cuDNN on its loader path
    if env.versions.get("cudnn") not in (None, ABSENT):
        pytest.skip("this machine has a cuDNN")
    assert env.versions["cudnn"] == ABSENT


# --- API facts from source ----------------------------------------------------------------------------------------

FA_2_5 = '''
def _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size, alibi_slopes, return_softmax):
    pass

def _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size,
                                alibi_slopes, deterministic, rng_state=None):
    pass
'''

FA_2_6 = '''
import torch

def _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                        return_softmax):
    pass

def _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size,
                                softcap, alibi_slopes, deterministic, rng_state=None):
    pass

class FlashAttnFunc(torch.autograd.Function):
    def _flash_attn_backward(self, softcap):  # a method, not the module-level function
        pass
'''

FA_2_7 = '''
import torch

if torch.__version__ >= "2.4.0":
    _torch_custom_op_wrapper = torch.library.custom_op
else:
    def _torch_custom_op_wrapper(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
        pass

@_torch_custom_op_wrapper("flash_attn::_flash_attn_backward", mutates_args=("dq", "dk", "dv"), device_types="cuda")
def _flash_attn_backward(dout: torch.Tensor, q: torch.Tensor, k, v, out, softmax_lse, dq, dk, dv, dropout_p: float,
                         softmax_scale: float, causal: bool, window_size_left: int, window_size_right: int,
                         softcap: float, alibi_slopes, deterministic: bool, rng_state=None) -> torch.Tensor:
    pass

try:
    def _flash_attn_varlen_forward(q, k, v, *, softcap: float = 0.0, window_size_left: int = -1,
                                   window_size_right=-1, block_table=None):
        pass
except ImportError:
    pass
'''


def test_function_parameters_reads_defaults() -> None:
    params = function_parameters(FA_2_7, ["_flash_attn_backward", "_flash_attn_varlen_forward", "missing"])
    assert set(params) == {"_flash_attn_backward", "_flash_attn_varlen_forward"}
    assert params["_flash_attn_backward"]["softcap"] is False  # no default: required
    assert params["_flash_attn_backward"]["rng_state"] is True
    assert params["_flash_attn_varlen_forward"]["softcap"] is True


def test_api_facts_flash_attn_2_5_has_no_softcap() -> None:
    facts = api_facts(FA_2_5, "flash_attn", ("_flash_attn_forward", "_flash_attn_varlen_backward",
                                             "_flash_attn_backward"))
    assert facts["flash_attn._flash_attn_varlen_backward.softcap"] is False
    assert facts["flash_attn._flash_attn_varlen_backward.softcap.required"] is False
    assert facts["flash_attn._flash_attn_varlen_backward.window_size"] is True
    assert facts["flash_attn._flash_attn_varlen_backward.window_size.required"] is True
    assert facts["flash_attn._flash_attn_varlen_backward.window_size_left"] is False
    assert "flash_attn._flash_attn_backward.softcap" not in facts  # function not there: unknown


def test_api_facts_flash_attn_2_6_softcap_is_required() -> None:
    facts = api_facts(FA_2_6, "flash_attn", ("_flash_attn_forward", "_flash_attn_varlen_backward",
                                             "_flash_attn_backward"))
    assert facts["flash_attn._flash_attn_varlen_backward.softcap"] is True
    assert facts["flash_attn._flash_attn_varlen_backward.softcap.required"] is True
    assert facts["flash_attn._flash_attn_forward.softcap.required"] is True
    assert "flash_attn._flash_attn_backward.softcap" not in facts  # only a method of that name


def test_api_facts_flash_attn_2_7_split_window() -> None:
    facts = api_facts(FA_2_7, "flash_attn", ("_flash_attn_backward", "_flash_attn_varlen_forward"))
    assert facts["flash_attn._flash_attn_backward.window_size"] is False
    assert facts["flash_attn._flash_attn_backward.window_size_left"] is True
    assert facts["flash_attn._flash_attn_backward.window_size_left.required"] is True
    assert facts["flash_attn._flash_attn_varlen_forward.window_size_left.required"] is False
    assert facts["flash_attn._flash_attn_varlen_forward.softcap.required"] is False


def test_probe_reads_the_installed_interface_without_importing_it(site: Site) -> None:
    site.dist("flash-attn", "2.6.3", files=("flash_attn/__init__.py", "flash_attn/flash_attn_interface.py"))
    site.module("flash_attn/__init__.py", "raise ImportError('undefined symbol: _ZN3c10')\n")
    site.module("flash_attn/flash_attn_interface.py", FA_2_6)
    assert locate_flash_attn_interface() == site.root / "flash_attn" / "flash_attn_interface.py"
    env = probe(timeout=15)
    assert env.api["flash_attn._flash_attn_varlen_backward.softcap.required"] is True
    assert env.api["flash_attn._flash_attn_varlen_backward.window_size"] is True
    assert "flash_attn" in env.import_errors  # the import fails, the source is read all the same
    assert "flash_attn" not in sys.modules


def test_unparsable_interface_is_a_note(site: Site) -> None:
    site.dist("flash-attn", "2.6.3")
    site.module("flash_attn/__init__.py")
    site.module("flash_attn/flash_attn_interface.py", "def broken(:\n")
    env = probe(timeout=15)
    assert notes_with(env, "could not read its API", "warning")
    assert not any(k.startswith("flash_attn.") for k in env.api)


# --- environment variables, robustness, plumbing ------------------------------------------------------------------

def test_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVTE_FUSED_ATTN", "0")
    monkeypatch.setenv("TORCH_CUDNN_SDPA_ENABLED", "1")
    monkeypatch.setenv("CUDNN_LOGLEVEL_DBG", "2")
    monkeypatch.setenv("SOMETHING_ELSE", "x")
    env = probe(timeout=10)
    assert env.env_vars["NVTE_FUSED_ATTN"] == "0"
    assert env.env_vars["TORCH_CUDNN_SDPA_ENABLED"] == "1"
    assert env.env_vars["CUDNN_LOGLEVEL_DBG"] == "2"
    assert "SOMETHING_ELSE" not in env.env_vars
    assert relevant_env_vars({"CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin"}) == {"CUDA_VISIBLE_DEVICES": "0"}


def test_a_failing_step_is_a_note_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> Environment:
        raise RuntimeError("metadata is broken")

    monkeypatch.setattr(probe_pkg, "package_versions", boom)
    monkeypatch.setattr(probe_pkg, "probe_api", lambda versions: 1 / 0)
    env = probe(timeout=10)
    assert notes_with(env, "'packages' failed: RuntimeError: metadata is broken", "error")
    assert notes_with(env, "'api' failed: ZeroDivisionError", "error")
    assert env.source == "probe"


def test_probe_survives_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_pkg, "_probe", lambda env, timeout, use_cache: 1 / 0)
    env = probe()
    assert notes_with(env, "the probe failed: ZeroDivisionError", "error")


def test_run_python_kills_a_hanging_child() -> None:
    start = time.monotonic()
    result = run_python("import subprocess, sys, time\n"
                        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                        "time.sleep(60)\n", timeout=0.5)
    assert time.monotonic() - start < 5
    assert result.timed_out and not result.ok
    assert result.failure() == "timed out"


def test_a_python_that_cannot_start_is_not_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    env = check_import("te", "transformer_engine.pytorch", 5, version="2.8.0")
    assert env.import_errors == {}
    assert notes_with(env, "could not run Python", "warning")


def test_run_python_payload_ignores_other_output() -> None:
    result = run_python("import json, sys\nprint('noise')\nprint(sys.argv[1] + json.dumps({'a': 1}))\n",
                        ["ATTNDOCTOR_JSON:"], timeout=10)
    assert result.ok and result.payload() == {"a": 1}


def test_last_meaningful_line() -> None:
    stderr = textwrap.dedent("""\
        Traceback (most recent call last):
          File "<string>", line 1, in <module>
            import flash_attn
            ^^^^^^^^^^^^^^^^^
          File "/site/flash_attn/__init__.py", line 3, in <module>
        ImportError: /site/x.so: undefined symbol: _ZN3c10

        """)
    assert last_meaningful_line(stderr) == "ImportError: /site/x.so: undefined symbol: _ZN3c10"
    assert last_meaningful_line("") == ""
    assert last_meaningful_line("   only indented\n") == "only indented"
