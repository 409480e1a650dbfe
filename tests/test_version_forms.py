"""Versions as tools print them (a driver as NVIDIA writes it, cuDNN as torch prints it, CUDA from a torch wheel);
a driver older than torch's CUDA major release is noted."""

import json

import pytest

from attndoctor.environment import environment_from_flags

H100_FLASH = ("explain", "--backend", "sdpa-flash", "--gpu", "H100", "--hdim", "128", "--dtype", "bf16", "--infer",
              "--torch", "2.11.0", "--format", "json")


def test_a_drivers_zero_padded_part_is_kept(cli):
    env = environment_from_flags({"driver": "560.35.03"})
    assert env.versions["driver"] == "560.35.03"
    code, out, _ = cli("explain", "--gpu", "H100", "--hdim", "128", "--driver", "560.35.03")
    assert "NVIDIA driver 560.35.03" in out.splitlines()[0]


def status(cli, *flags: str) -> tuple[str, set[str]]:
    code, out, err = cli(*H100_FLASH, *flags)
    verdict = next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == "sdpa-flash")
    return verdict["status"], {f["rule"] for f in verdict["findings"] if f.get("applies") is True}


@pytest.mark.parametrize(("cuda", "driver", "noted"), [
    ("13.0", "535.54.03", True), ("13.0", "575.57.08", True), ("13.0", "580.65.06", False),
    ("12.8", "535.54.03", False), ("12.4", "520.61.05", True), ("11.8", "450.80.02", False), ("11.8", "450.51.06", True),
    ("11.0", "450.51.06", False), ("11.0", "440.33.01", True),
    # nvidia-smi's "CUDA Version: 12.2" given as the driver: only a newer major release is too new for it
    ("12.8", "12.2", False), ("13.0", "12.8", True),
])
def test_a_driver_older_than_the_cuda_major_release_is_noted(cli, cuda, driver, noted):
    """A note, not a refusal: CUDA's forward-compatibility package runs newer CUDA on older data-center drivers."""
    verdict, applied = status(cli, "--torch", f"2.11.0+cu{cuda.replace('.', '')}", "--driver", driver)
    assert ("AD-DRIVER-OLDER-THAN-CUDA" in applied) is noted
    assert verdict == "supported"


def test_a_bare_cuda_may_name_a_toolkit_and_refuses_nothing(cli):
    """Users give nvcc's or nvidia-smi's CUDA as often as torch's: only the wheel's label (or this machine) says it."""
    verdict, applied = status(cli, "--cuda", "13.0", "--driver", "535.54.03")
    assert "AD-DRIVER-OLDER-THAN-CUDA" not in applied


def test_without_the_driver_nothing_is_claimed_about_it(cli):
    verdict, applied = status(cli, "--torch", "2.11.0+cu130")
    assert verdict == "supported" and "AD-DRIVER-OLDER-THAN-CUDA" not in applied


@pytest.mark.parametrize(("torch", "cuda", "expected"), [
    ("2.9.0+cu128", None, "12.8"), ("2.11.0+cu130", None, "13.0"), ("2.1.2+cu118", None, "11.8"),
    ("2.9.0+cu128", "12.9", "12.8"), ("2.9.0", "12.9", "12.9"), ("2.9.0", None, None), ("2.9.0+cpu", None, None),
])
def test_a_torch_wheels_local_label_is_the_cuda_torch_was_built_with(torch, cuda, expected):
    env = environment_from_flags({"torch": torch, "cuda": cuda})
    assert env.versions.get("cuda") == expected


def test_a_cu130_torch_on_a_550_driver_is_noted(cli):
    verdict, applied = status(cli, "--torch", "2.11.0+cu130", "--driver", "550.54.15")
    assert "AD-DRIVER-OLDER-THAN-CUDA" in applied


@pytest.mark.parametrize(("given", "read"), [("90100", "9.1.0"), ("91002", "9.10.2"), ("8902", "8.9.2"),
                                             ("7605", "7.6.5"), ("9.1.0", "9.1.0")])
def test_cudnn_as_torch_prints_it_is_a_version(given, read):
    """torch.backends.cudnn.version() is cudnn_version.h's CUDNN_VERSION: 9.x is major * 10000 + minor * 100 + patch."""
    assert environment_from_flags({"cudnn": given}).versions["cudnn"] == read


def test_why_reads_cudnn_as_torch_prints_it(cli):
    code, out, err = cli("why", "--no-here", "--format", "json", "--", "torch.backends.cudnn.version() = 90501")
    assert json.loads(out)["understood"]["facts"]["cudnn"]["value"] == "9.5.1"


@pytest.mark.parametrize("given", ["main@43950dd", "git+https://github.com/Dao-AILab/flash-attention@43950dd",
                                   "43950dd1c0ffee"])
def test_a_source_build_at_a_commit_is_an_unknown_release_and_says_so(cli, given):
    env = environment_from_flags({"flash_attn": given})
    assert "flash_attn" not in env.versions
    assert any(given in n["message"] and "source" in n["message"] for n in env.notes)
    code, out, err = cli("explain", "--backend", "flash-attn-2", "--gpu", "A100", "--hdim", "128", "--dtype", "bf16",
                         "--flash-attn", given)
    assert code in (0, 1) and not err


def test_a_word_that_is_no_version_nor_a_commit_is_still_refused(cli):
    code, _, err = cli("explain", "--gpu", "A100", "--hdim", "128", "--flash-attn", "latest")
    assert code == 2 and "is not a version" in err


@pytest.mark.parametrize(("name", "given", "read"), [
    ("torch", "1.12 (cu116)", "1.12+cu116"), ("torch", "libtorch 2.5.1", "2.5.1"), ("torch", "torch==2.3.1", "2.3.1"),
    ("torch", "PyTorch 2.4.0+cu121", "2.4.0+cu121"), ("flash_attn", "2.0.4 (ROCm)", "2.0.4"),
    ("flash_attn", "flash-attn==2.5.6", "2.5.6"), ("cudnn", "nvidia-cudnn-cu12==9.1.0.70", "9.1.0.70"),
    ("torch", "PyTorch version: 2.3.1+cu121", "2.3.1+cu121"), ("driver", "Driver Version: 535.104.05", "535.104.05"),
    ("flash_attn", "flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl",
     "2.5.8+cu122torch2.3cxx11abiFALSE"), ("torch", "torch-2.4.0+cu121-cp311-cp311-linux_x86_64.whl", "2.4.0+cu121"),
])
def test_a_version_as_people_write_it_is_read_past_its_package_name_and_remark(name, given, read):
    """pip's NAME==VERSION, a package name before the number, a remark in parentheses after it; a CUDA tag there
    is the wheel's label."""
    assert environment_from_flags({name: given}).versions[name] == read


@pytest.mark.parametrize(("name", "given"), [("torch", "flash-attn 2.5.6"), ("torch", "2.x (cu116)"),
                                             ("flash_attn", "torch==2.3.1"),
                                             ("flash_attn", "torch-2.4.0+cu121-cp311-cp311-linux_x86_64.whl")])
def test_another_packages_name_or_no_number_is_still_refused(cli, name, given):
    code, _, err = cli("explain", "--gpu", "A100", "--hdim", "128", f"--{name.replace('_', '-')}", given)
    assert code == 2 and "is not a version" in err


def test_a_remark_read_past_is_said(cli):
    """'2.0.4 (ROCm)' is read as 2.0.4 with an info note: the rules model CUDA builds, not the remark."""
    env = environment_from_flags({"flash_attn": "2.0.4 (ROCm)"})
    assert any(n["kind"] == "version-remark" and "ROCm" in n["message"] for n in env.notes)
    named = environment_from_flags({"torch": "libtorch 2.5.1 (nightly)"})
    assert named.versions["torch"] == "2.5.1" and any("'nightly'" in n["message"] for n in named.notes)
    assert not environment_from_flags({"torch": "1.12 (cu116)"}).notes
    assert not environment_from_flags({"torch": "torch==2.3.1"}).notes


@pytest.mark.parametrize(("name", "given", "expected"), [
    ("cuda", "cu124", "12.4"), ("cuda", "CU118", "11.8"), ("cuda", "cu130", "13.0"),
    # pip's "Successfully installed flash_attn-2.7.4+cu12torch2.5cxx11abiFALSE torch-2.5.1"
    ("flash_attn", "flash_attn-2.7.4+cu12torch2.5cxx11abiFALSE", "2.7.4+cu12torch2.5cxx11abiFALSE"),
    ("flash_attn", "flash-attn-2.8.3", "2.8.3"), ("torch", "torch-2.5.1", "2.5.1"),
])
def test_a_cuda_tag_and_pips_installed_names_read_as_their_version(name, given, expected):
    assert environment_from_flags({name: given}).versions[name] == expected


def test_another_packages_installed_name_is_not_taken_for_the_version(cli):
    code, _, err = cli("explain", "--hdim", "128", "--torch", "xformers-0.0.28")
    assert code == 2 and "--torch: 'xformers-0.0.28' is not a version" in err
    code, _, err = cli("explain", "--hdim", "128", "--cuda", "cu12")
    assert code == 2 and "'cu12' is not a version" in err
