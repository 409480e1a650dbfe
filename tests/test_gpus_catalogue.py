"""The catalogue's breadth: every product resolves from the names tools print, each has its architecture and shared
memory limit, and an unknown name is refused with the nearest known ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attndoctor.runs.bench import gpu_facts
from attndoctor.errors import UsageError
from attndoctor.gpus import gpu_catalogue, lookup_gpu, nearest_gpu_names, resolve_gpu, sm_spec, sm_table


def _smi_name(name: str) -> str:
    """The name as nvidia-smi and torch.cuda.get_device_name print it: NVIDIA, then GeForce for consumer cards."""
    if name.startswith(("RTX ", "GTX ")) and not name.startswith(("RTX A", "RTX PRO")) and "Ada" not in name:
        return f"NVIDIA GeForce {name}"
    if name.startswith(("Quadro", "TITAN X (Pascal)", "Jetson")):
        return name
    return f"NVIDIA {name}"


def test_at_least_200_models_from_kepler_on() -> None:
    specs = gpu_catalogue()
    assert len(specs) >= 200
    assert min(s.sm for s in specs) == 30
    assert {s.arch for s in specs} == {"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper",
                                       "Blackwell"}


@pytest.mark.parametrize("spec", gpu_catalogue(), ids=lambda s: s.name)
def test_every_entry_resolves_from_its_nvidia_smi_name(spec) -> None:
    for text in (_smi_name(spec.name), spec.name.upper(), spec.name.replace(" ", "-").lower()):
        found = lookup_gpu(text)
        assert found is not None and found.name == spec.name, text


@pytest.mark.parametrize("sm, arch, kib", [
    (60, "Pascal", 48), (61, "Pascal", 48), (62, "Pascal", 48), (70, "Volta", 96), (72, "Volta", 96),
    (75, "Turing", 64), (80, "Ampere", 163), (86, "Ampere", 99), (87, "Ampere", 163), (89, "Ada", 99),
    (90, "Hopper", 227), (100, "Blackwell", 227), (101, "Blackwell", 227), (103, "Blackwell", 227),
    (110, "Blackwell", 227), (120, "Blackwell", 99), (121, "Blackwell", 99),
])
def test_shared_memory_per_block_by_compute_capability(sm: int, arch: str, kib: int) -> None:
    # CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"; NVIDIA/cutlass
    # python/CuTeDSL/cutlass/cutlass_dsl/cutlass.py@v4.7.0:148 gives sm80-121 as (per-SM KiB - 1) * 1024
    spec = sm_spec(sm)
    assert spec is not None and (spec.arch, spec.smem_per_block_optin_kib) == (arch, kib)
    assert spec.source.startswith("https://")


def test_the_sm_table_has_nothing_else() -> None:
    assert sorted(sm_table()) == [30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103,
                                  110, 120, 121]
    assert sm_spec(None) is None and sm_spec(51) is None


@pytest.mark.parametrize("text, name", [
    # nvidia-smi --query-gpu=name and torch.cuda.get_device_name; NVML names as the driver lists them
    # (NVIDIA/open-gpu-kernel-modules README.md@595.44.03)
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA RTX A6000", "RTX A6000"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA GeForce RTX 3080 Laptop GPU", "RTX 3080 Laptop GPU"),
    ("Tesla T4", "T4"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA A10G", "A10G"),
    ("Quadro RTX 8000", "Quadro RTX 8000"),
    ("Orin (nvgpu)", "Jetson Orin"),
    ("NVIDIA GeForce RTX 4090 D", "RTX 4090 D"),
    ("NVIDIA GeForce RTX 5090 D v2", "RTX 5090 D"),
    ("NVIDIA GeForce RTX 3050 6GB Laptop GPU", "RTX 3050 Laptop GPU"),
    ("NVIDIA GeForce RTX 3050Ti Laptop GPU", "RTX 3050 Ti Laptop GPU"),
    ("NVIDIA GeForce RTX 2080 with Max-Q Design", "RTX 2080 Max-Q"),
    ("NVIDIA RTX 4000 SFF Ada Generation", "RTX 4000 SFF Ada"),
    ("NVIDIA RTX 2000E Ada Generation", "RTX 2000 Ada"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Blackwell"),
    ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "RTX PRO 4000 Blackwell SFF"),
    ("NVIDIA RTX PRO 5000 72GB Blackwell", "RTX PRO 5000 Blackwell"),
    ("NVIDIA B300 SXM6 AC", "B300"),
    ("NVIDIA H800 PCIe", "H800 PCIe"),
    ("NVIDIA H20-3e", "H20-3e"),
    ("NVIDIA A800-SXM4-80GB", "A800 SXM4 80GB"),
    ("NVIDIA GB10", "GB10"),
    ("Tesla P100-PCIE-16GB", "P100"),
    ("Tesla V100-SXM2-16GB", "V100"),
    ("TITAN X (Pascal)", "TITAN X (Pascal)"),
    # how people write them
    ("4090", "RTX 4090"),
    ("rtx4090", "RTX 4090"),
    ("3090 Ti", "RTX 3090 Ti"),
    ("A100 80G", "A100 80GB"),
    ("A100 40G", "A100 40GB"),
    ("H100-PCIe", "H100 PCIe"),
    ("4060 laptop", "RTX 4060 Laptop GPU"),
    ("DGX Spark", "GB10"),
    ("Jetson AGX Thor", "Jetson T5000"),
    ("gtx1080ti", "GTX 1080 Ti"),
    # "6000 Pro" in the order of the Ada and Ampere cards' names, WS for Workstation Edition
    ("RTX 6000 Pro", "RTX PRO 6000 Blackwell"),
    ("RTX 6000 PRO WS", "RTX PRO 6000 Blackwell"),
    ("RTX PRO 6000 WS", "RTX PRO 6000 Blackwell"),
    ("RTX 6000 Pro Blackwell", "RTX PRO 6000 Blackwell"),
])
def test_names_as_tools_and_people_write_them(text: str, name: str) -> None:
    spec = lookup_gpu(text)
    assert spec is not None, text
    assert spec.name == name


@pytest.mark.parametrize("text, name", [
    ("3080", "RTX 3080"), ("3080 Ti", "RTX 3080 Ti"), ("RTX 3080 Laptop", "RTX 3080 Laptop GPU"),
    ("4070", "RTX 4070"), ("4070 Ti", "RTX 4070 Ti"), ("4070 Ti SUPER", "RTX 4070 Ti SUPER"),
    ("4070 SUPER", "RTX 4070 SUPER"), ("L4", "L4"), ("L40", "L40"), ("L20", "L20"), ("L2", "L2"), ("A10", "A10"),
    ("A100", "A100 80GB"), ("H20", "H20"), ("H200", "H200"), ("RTX 6000 Ada", "RTX 6000 Ada"),
    ("Quadro RTX 6000", "Quadro RTX 6000"), ("RTX PRO 4000 Blackwell", "RTX PRO 4000 Blackwell"),
])
def test_a_near_name_is_never_taken_for_its_neighbour(text: str, name: str) -> None:
    assert lookup_gpu(text).name == name  # type: ignore[union-attr]


def test_unknown_names_get_the_nearest_known_ones() -> None:
    assert nearest_gpu_names("RTX 4090 Ti")[0] == "RTX 4090"
    assert "H100 SXM" in nearest_gpu_names("H1000")
    assert nearest_gpu_names("") == []
    with pytest.raises(Exception, match=r"nearest known: RTX 4090\b"):
        resolve_gpu("RTX 4090 Ti")


@pytest.mark.parametrize("text, name", [("T4 (AWS g4dn.xlarge)", "T4"), ("A10G (g5.2xlarge)", "A10G"),
                                        ("RTX 4090 (24GB)", "RTX 4090"), ("(cloud) L4", "L4")])
def test_a_remark_in_parentheses_beside_a_known_name_is_read_past(text: str, name: str) -> None:
    assert resolve_gpu(text)[0] == name


def test_a_compute_capability_after_a_comma_is_read_as_nvidia_smi_prints_it() -> None:
    """nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader: "NVIDIA H100 80GB HBM3, 9.0"."""
    assert resolve_gpu("NVIDIA H100 80GB HBM3, 9.0") == ("H100 SXM", 90)
    assert resolve_gpu("GB300, compute capability 10.3") == ("GB300", 103)
    with pytest.raises(Exception, match=r"names H100 SXM \(sm90\) and sm80; give one"):
        resolve_gpu("NVIDIA H100 80GB HBM3, 8.0")
    with pytest.raises(Exception, match=r"unknown GPU 'foo, 9.0'"):
        resolve_gpu("foo, 9.0")


def test_two_gpus_of_two_architectures_in_one_value_are_refused_by_name() -> None:
    with pytest.raises(Exception, match=r"names several GPUs \(RTX 3090, RTX 5090\); give one"):
        resolve_gpu("RTX 3090 / RTX 5090")
    with pytest.raises(Exception, match=r"unknown GPU 'Jetson \(JetPack 5\)'"):
        resolve_gpu("Jetson (JetPack 5)")  # Orin or Xavier: the remark does not decide the architecture


def test_gpus_of_one_architecture_in_one_value_are_that_architecture() -> None:
    """The rules depend on the architecture: 'RTX 5080/5090' is sm120 whichever of the two ran."""
    assert resolve_gpu("RTX 5080/5090") == ("RTX 5080 / RTX 5090", 120)
    assert resolve_gpu("H100 / H200")[1] == 90


def test_cli_refuses_an_unknown_gpu_with_exit_2_and_one_line() -> None:
    run = subprocess.run([sys.executable, "-m", "attndoctor", "explain", "--hdim", "128", "--gpu", "RTX 4090 Ti"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "nearest known: RTX 4090" in lines[0]
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("text, sm", [("sm86", 86), ("sm_86", 86), ("8.6", 86), ("sm110", 110), ("12.1", 121)])
def test_architectures_keep_working(text: str, sm: int) -> None:
    assert resolve_gpu(text) == (f"sm{sm}", sm)


def test_bench_says_the_peak_is_unknown_for_an_entry_without_figures() -> None:
    spec = lookup_gpu("RTX 4080")
    assert spec is not None and spec.tflops("bf16") is None and spec.bandwidth_gbs is None
    facts = gpu_facts("NVIDIA GeForce RTX 4080")
    assert facts["catalogue"] == "RTX 4080" and facts["peak_tflops"] == {}


def test_the_driver_name_lister_reads_the_readme_table(tmp_path, capsys) -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "gpus" / "nvml_names.py"
    spec = importlib.util.spec_from_file_location("nvml_names", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    # rows as NVIDIA/open-gpu-kernel-modules README.md@595.44.03 writes them
    readme = tmp_path / "README.md"
    readme.write_text("| Product Name | GPU IDs |\n| --- | --- |\n"
                      "| Tesla T4                                        | 1EB8 10DE 12A2 |\n"
                      "| NVIDIA GeForce RTX 4090 D                       | 2685           |\n"
                      "| NVIDIA CMP 30HX                                 | 2189           |\n"
                      "| NVIDIA GeForce RTX 4090 D                       | 2685 1028 0001 |\n")
    assert module.driver_names(readme.read_text()) == ["Tesla T4", "NVIDIA GeForce RTX 4090 D", "NVIDIA CMP 30HX"]
    assert module.main([str(readme)]) == 0
    assert capsys.readouterr().out.splitlines() == ["NVIDIA CMP 30HX"]


@pytest.mark.parametrize("text,name", [
    ("ec2 g6.4xlarge", "L4"),
    ("g6.48xlarge", "L4"),
    ("AWS p5.48xlarge", "H100 SXM"),
    ("p4d.24xlarge", "A100 40GB"),
    ("p3dn.24xlarge", "V100"),
    ("p3.2xlarge", "V100"),
    ("g5.2xlarge", "A10G"),
    ("g4dn.xlarge", "T4"),
    ("g4dn.metal", "T4"),
    ("Standard_NC24ads_A100_v4", "A100 80GB PCIe"),
    ("Standard_ND96amsr_A100_v4", "A100 80GB"),
    ("Standard_ND96asr_v4", "A100 40GB"),
    ("Standard_ND96isr_H100_v5", "H100 SXM"),
    ("Standard_NC4as_T4_v3", "T4"),
    ("Standard_NC6s_v3", "V100"),
    ("ND40rs_v2", "V100"),
    ("T4 (AWS g4dn.xlarge)", "T4"),
])
def test_cloud_instance_types_name_their_gpu(text: str, name: str) -> None:
    assert resolve_gpu(text)[0] == name


@pytest.mark.parametrize("text", ["g4ad.xlarge", "p9.48xlarge", "g5g.xlarge", "Standard_NV12s_v3", "c5.xlarge"])
def test_instance_types_the_tables_do_not_list_stay_unknown(text: str) -> None:
    with pytest.raises(UsageError):
        resolve_gpu(text)


def test_a_bad_instance_table_is_named() -> None:
    from attndoctor.gpus import parse_instances

    with pytest.raises(ValueError, match=r"instance\[0\]: gpu"):
        parse_instances([{"pattern": "x", "gpu": "Z999", "source": "https://example.org"}], {"T4"})
    with pytest.raises(ValueError, match=r"instance\[0\]: pattern"):
        parse_instances([{"pattern": "(", "gpu": "T4", "source": "https://example.org"}], {"T4"})
    assert parse_instances([{"pattern": "g4dn\\.xlarge", "gpu": "T4", "source": "https://example.org"}], {"T4"})
