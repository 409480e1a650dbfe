"""The fact reader of `why`: package lists, environment reports, nvidia-smi, wheel names, paths and shared-memory
figures, each fact with its line; and the refusal of binary input."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from attndoctor.errors import UsageError
from attndoctor.why.catalogue import catalogue_path, load_catalogue
from attndoctor.why.facts import check_text, read_facts
from attndoctor.why.reader import read_source, read_text

# python -m torch.utils.collect_env: the template and prefixes of torch/utils/collect_env.py in the torch 2.13.0
# wheel (env_info_fmt; "[pip3] " and "[conda] " from pretty_str; the GPU list with its UUIDs removed; cuDNN as
# "Probably one of the following:" and the libcudnn paths ldconfig lists).
COLLECT_ENV = """\
PyTorch version: 2.5.1+cu124
Is debug build: False
CUDA used to build PyTorch: 12.4
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.4 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Clang version: Could not collect
CMake version: version 3.29.2
Libc version: glibc-2.35

Python version: 3.11.9 (main, Apr 19 2024, 16:48:06) [GCC 11.2.0] (64-bit runtime)
Python platform: Linux-5.15.0-105-generic-x86_64-with-glibc2.35
Is CUDA available: True
CUDA runtime version: 12.4.131
CUDA_MODULE_LOADING set to: LAZY
GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB
Nvidia driver version: 550.54.15
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7
/usr/lib/x86_64-linux-gnu/libcudnn_adv_infer.so.8.9.7
HIP runtime version: N/A
MIOpen runtime version: N/A
Is XNNPACK available: True

Versions of relevant libraries:
[pip3] numpy==1.26.4
[pip3] nvidia-cudnn-cu12==9.1.0.70
[pip3] torch==2.5.1
[pip3] transformer_engine_torch==2.4.0
[pip3] triton==3.1.0
[conda] numpy                     1.26.4                   pypi_0    pypi
[conda] torch                     2.5.1                    pypi_0    pypi
"""

# Several GPUs: collect_env starts the list on the next line (maybe_start_on_next_line).
COLLECT_ENV_MULTI_GPU = """\
PyTorch version: 2.7.0+cu128
CUDA used to build PyTorch: 12.8
GPU models and configuration:
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3

Nvidia driver version: 570.124.06
cuDNN version: Could not collect
"""

# vLLM's collect_env (vllm/collect_env.py) prints torch's report and then its own block.
VLLM_COLLECT_ENV = """\
PyTorch version: 2.6.0+cu124
CUDA used to build PyTorch: 12.4
GPU models and configuration: GPU 0: NVIDIA L40S
Nvidia driver version: 560.35.03
[pip3] flashinfer-python==0.2.2.post1
[pip3] torch==2.6.0
[pip3] xformers==0.0.29.post2
vLLM Version: 0.8.2
vLLM Build Flags:
CUDA Archs: Not Set; ROCm: Disabled; Neuron: Disabled
"""

# transformers env (transformers/commands/env.py, 4.46.3): "- {prop}: {val}" per line.
TRANSFORMERS_ENV = """\
Copy-and-paste the text below in your GitHub issue and FILL OUT the two last points.

- `transformers` version: 4.46.3
- Platform: Linux-6.5.0-1020-aws-x86_64-with-glibc2.35
- Python version: 3.10.14
- Huggingface_hub version: 0.26.2
- Safetensors version: 0.4.5
- Accelerate version: 1.1.1
- Accelerate config: 	not found
- PyTorch version (GPU?): 2.4.1+cu121 (True)
- Tensorflow version (GPU?): not installed (NA)
- Flax version (CPU?/GPU?/TPU?): not installed (NA)
- Jax version: not installed
- JaxLib version: not installed
- Using distributed or parallel set-up in script?: <fill in>
- Using GPU in script?: <fill in>
- GPU type: NVIDIA A10G
"""

# nvidia-smi of driver 550 (banner and one row per GPU), as pasted in issues and READMEs.
NVIDIA_SMI = """\
Mon Jun 10 14:55:30 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090        Off |   00000000:41:00.0 Off |                  Off |
|  0%   36C    P8             37W /  480W |    3170MiB /  24564MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""

# pip list (columns) and pip freeze.
PIP_LIST = """\
Package                  Version
------------------------ ------------
flash_attn               2.7.3
nvidia-cudnn-frontend    1.8.0
torch                    2.5.1+cu124
transformers             4.46.3
xformers                 0.0.28.post3
"""
PIP_FREEZE = """\
flash-attn==2.6.3
flash_attn_3==3.0.0b1
flash-attn-4==4.0.0b36
transformer-engine==2.4.0
torch==2.4.0+cu121
vllm==0.6.3.post1
"""


def _catalogue():
    return load_catalogue(str(catalogue_path(None)))


def _facts(text: str) -> dict:
    return {f.field: (f.value, f.line) for f in read_text(text, _catalogue()).facts.values()}


def test_collect_env() -> None:
    facts = _facts(COLLECT_ENV)
    assert facts["torch"] == ("2.5.1", 1)
    assert facts["cuda"] == ("12.4", 3)
    assert facts["python"] == ("3.11", 12)
    assert facts["gpu"] == ("NVIDIA A100-SXM4-80GB", 17)
    assert facts["driver"] == ("550.54.15", 18)
    # the pip wheel of cuDNN beats the libcudnn paths collect_env only guesses at
    assert facts["cudnn"] == ("9.1.0", 28)
    assert facts["te"] == ("2.4.0", 30)
    assert facts["triton"] == ("3.1.0", 31)


def test_collect_env_with_several_gpus_and_no_cudnn() -> None:
    facts = _facts(COLLECT_ENV_MULTI_GPU)
    assert facts["gpu"] == ("NVIDIA H100 80GB HBM3", 4)
    assert facts["torch"] == ("2.7.0", 1) and facts["cuda"] == ("12.8", 2)
    assert facts["driver"] == ("570.124.06", 7)
    assert "cudnn" not in facts


def test_vllm_collect_env() -> None:
    facts = _facts(VLLM_COLLECT_ENV)
    assert facts["vllm"] == ("0.8.2", 8)
    assert facts["xformers"] == ("0.0.29.post2", 7)
    assert facts["gpu"] == ("NVIDIA L40S", 3)


def test_transformers_env() -> None:
    facts = _facts(TRANSFORMERS_ENV)
    assert facts["transformers"] == ("4.46.3", 3)
    assert facts["python"] == ("3.10", 5)
    assert facts["torch"] == ("2.4.1", 10)
    assert facts["cuda"] == ("12.1", 10)  # read off torch's local label, +cu121
    assert facts["gpu"] == ("NVIDIA A10G", 17)


def test_nvidia_smi_banner_and_row() -> None:
    facts = _facts(NVIDIA_SMI)
    assert facts["driver"] == ("550.90.07", 3)
    assert facts["driver_cuda"] == ("12.4", 3)
    assert facts["gpu"] == ("NVIDIA GeForce RTX 4090", 9)
    # the banner's CUDA is the driver's, not the CUDA torch was built with
    assert "cuda" not in facts


def test_a_truncated_nvidia_smi_name_gives_no_gpu() -> None:
    # nvidia-smi before 530 cut long names to 19 characters ("NVIDIA A100-SXM..."): several GPUs fit
    row = "|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |"
    assert all(f.field != "gpu" for f in read_facts([row]))


def test_pip_list_columns() -> None:
    facts = _facts(PIP_LIST)
    assert facts["flash_attn"] == ("2.7.3", 3)
    assert facts["cudnn_frontend"] == ("1.8.0", 4)
    assert facts["torch"] == ("2.5.1", 5) and facts["cuda"] == ("12.4", 5)
    assert facts["transformers"] == ("4.46.3", 6)
    assert facts["xformers"] == ("0.0.28.post3", 7)


def test_pip_freeze_names_as_distributions_spell_them() -> None:
    facts = _facts(PIP_FREEZE)
    assert facts["flash_attn"] == ("2.6.3", 1)
    assert facts["flash_attn_3"] == ("3.0.0b1", 2)
    assert facts["flash_attn_4"] == ("4.0.0b36", 3)
    assert facts["te"] == ("2.4.0", 4)
    assert facts["torch"] == ("2.4.0", 5) and facts["cuda"] == ("12.1", 5)
    assert facts["vllm"] == ("0.6.3.post1", 6)


def test_pip_columns_need_a_header_or_a_prefix() -> None:
    # "torch 2.5.1" in prose is no package list
    assert read_facts(["torch 2.5.1 is slow"]) == []


def test_wheel_file_name() -> None:
    line = "Processing ./flash_attn-2.7.3+cu12torch2.5cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
    facts = {f.field: f.value for f in read_facts([line])}
    assert facts == {"flash_attn": "2.7.3", "build_cuda": "12", "build_torch": "2.5", "build_abi": False,
                     "python": "3.11"}
    line = "flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
    facts = {f.field: f.value for f in read_facts([line])}
    assert (facts["build_torch"], facts["build_abi"], facts["python"]) == ("2.7", True, "3.12")
    # the wheel pip refused was never installed: its version and Python tag describe nothing that runs
    assert read_facts(["ERROR: xformers-0.0.14.dev0-cp37-cp37m-linux_x86_64.whl is not a supported wheel on this "
                       "platform."]) == []


def test_site_packages_and_extension_paths() -> None:
    lines = [
        '  File "/usr/lib/python3.10/site-packages/torch/nn/functional.py", line 5560, in forward',
        "ImportError: /opt/conda/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi",
    ]
    found = [(f.field, f.value, f.line) for f in read_facts(lines)]
    assert ("python", "3.10", 1) in found and ("python", "3.11", 2) in found
    assert read_text("\n".join(lines), _catalogue()).facts["python"].value == "3.10"


def test_capability_and_device_name_prints() -> None:
    text = """\
>>> torch.cuda.get_device_name(0)
'NVIDIA GeForce RTX 3090'
>>> torch.cuda.get_device_capability()
(8, 6)
"""
    found = [(f.field, f.value, f.line) for f in read_facts(text.splitlines())]
    assert ("gpu", "NVIDIA GeForce RTX 3090", 2) in found and ("gpu", "8.6", 4) in found
    assert read_facts(["(8, 6)"]) == []  # a pair with no call before it says nothing


def test_shared_memory_figures() -> None:
    # triton-lang/triton python/triton/runtime/errors.py@545699290b85 (OutOfResources)
    triton = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, "
              "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.")
    facts = _facts(triton)
    assert facts["smem_required"] == (147456, 1) and facts["smem_limit"] == (101376, 1)
    # ptxas, as in deepseek-ai/DeepGEMM issue logs: "uses too much shared data (0x18004 bytes, 0xc000 max)"
    ptxas = "ptxas error   : Entry function '_Z6kernelv' uses too much shared data (0x18004 bytes, 0xc000 max)"
    facts = {f.field: f.value for f in read_facts([ptxas])}
    assert facts == {"smem_required": 0x18004, "smem_limit": 0xC000}


def test_structured_facts_beat_loose_words() -> None:
    text = "I think this is an H100 issue\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 4090\n"
    assert _facts(text)["gpu"] == ("NVIDIA GeForce RTX 4090", 2)


def test_an_unknown_gpu_name_is_reported_not_used() -> None:
    reading = read_text("GPU models and configuration: GPU 0: NVIDIA Quantum X9000\n", _catalogue())
    assert "gpu" not in reading.facts
    assert any("Quantum X9000" in note for note in reading.ignored)


def test_the_engine_takes_the_facts() -> None:
    from attndoctor.environment import environment_from_flags
    from attndoctor.why.service import explain_text

    answer = explain_text(COLLECT_ENV + "RuntimeError: No available kernel. Aborting execution.\n",
                          base_env=environment_from_flags({}))
    env = answer.environment
    assert (env.gpu, env.sm) == ("A100 80GB", 80)
    assert env.versions["torch"] == "2.5.1" and env.versions["cudnn"] == "9.1.0"
    assert env.versions["driver"] == "550.54.15"


@pytest.mark.parametrize("data, fragment", [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4, "NUL"),
    (bytes(range(0x80, 0x100)) * 8, "not UTF-8"),
    ("\x01\x02\x03\x04\x05 ab" * 50, "unprintable"),
])
def test_binary_input_is_refused(data: bytes | str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment) as info:
        check_text(data, "--log x")
    assert "\n" not in str(info.value)


def test_a_few_bad_bytes_in_a_log_are_kept() -> None:
    data = "RuntimeError: No available kernel. Aborting execution.\n".encode() + b"\xff\xfe garbled\n"
    assert "No available kernel" in check_text(data, "--log x")
    colours = "\x1b[31mERROR\x1b[0m flash-attn==2.7.3\n"
    assert check_text(colours, "the text") == colours


def test_standard_input_is_checked_as_bytes() -> None:
    class Stdin(io.StringIO):
        buffer = io.BytesIO(b"\x00\x01binary")

        def isatty(self) -> bool:
            return False

    with pytest.raises(UsageError, match="standard input: not a text"):
        read_source("-", None, Stdin())


def test_why_refuses_a_binary_log_with_exit_2_and_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "a.out"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 64 + b"T4 H100 torch==2.5.1")
    run = subprocess.run([sys.executable, "-m", "attndoctor", "why", "--no-here", "--log", str(binary)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "not a text" in lines[0]
    assert run.stdout == ""


def test_the_json_with_these_facts_matches_the_published_schema(tmp_path: Path) -> None:
    import json
    from importlib import resources

    import jsonschema
    from referencing import Registry, Resource

    from test_json_schema import closed

    def load(name: str) -> dict:
        return json.loads((resources.files("attndoctor") / "schema" / name).read_text(encoding="utf-8"))

    report, why_schema = closed(load("report-v1.json")), closed(load("why-v1.json"))
    validator = jsonschema.Draft202012Validator(
        why_schema, registry=Registry().with_resource(report["$id"], Resource.from_contents(report)))
    log = tmp_path / "env.log"
    wheel = "flash_attn-2.7.3+cu12torch2.5cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
    log.write_text(f"{COLLECT_ENV}{NVIDIA_SMI}{wheel}\n"
                   "out of resource: shared memory, Required: 147456, Hardware limit: 101376.\n")
    command = ["why", "--no-here", "--log", str(log), "--format", "json"]
    run = subprocess.run([sys.executable, "-m", "attndoctor", *command], capture_output=True, text=True, timeout=120)
    doc = json.loads(run.stdout)
    assert [f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(doc)] == []
    facts = {k: v["value"] for k, v in doc["understood"]["facts"].items()}
    assert facts["build_abi"] is False and facts["smem_limit"] == 101376 and facts["driver_cuda"] == "12.4"


def test_a_pip_list_row_without_its_header_gives_torchs_cuda_label():
    """`pip list | grep torch` drops the header; the row's `+cu121` is still torch's CUDA."""
    facts = _facts("torch                     2.3.0+cu121\nflash_attn                2.5.8\n")
    assert facts["torch"] == ("2.3.0", 1) and facts["cuda"] == ("12.1", 1)


def test_pips_successfully_installed_line_gives_each_version():
    facts = _facts("Successfully installed flash_attn-2.7.4.post1 torch-2.5.1+cu124 some-tool-1.0\n")
    assert facts["flash_attn"] == ("2.7.4.post1", 1) and facts["torch"] == ("2.5.1", 1) and facts["cuda"] == ("12.4", 1)
    assert "torch" not in _facts("Successfully installed torch\n")


def test_device_querys_capability_line_is_the_gpu():
    assert _facts("  CUDA Capability Major/Minor version number:    8.6\n")["gpu"] == ("sm86", 1)
    assert "gpu" not in _facts("  CUDA Driver Version / Runtime Version          12.4 / 12.4\n")


def test_prose_with_a_cuda_label_is_not_a_pip_row():
    assert "cuda" not in _facts("I use torch 2.3.0+cu121 here\n")


@pytest.mark.parametrize(("text", "gpu"), [
    ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your NVIDIA GeForce RTX "
     "2080 Ti GPU has compute capability 7.5.", "NVIDIA GeForce RTX 2080 Ti"),
    ("torch.cuda.get_device_name(0) returns 'NVIDIA A100-SXM4-80GB' here", "NVIDIA A100-SXM4-80GB"),
    ("on my NVIDIA RTX 4000 Ada Generation it fails", "NVIDIA RTX 4000 Ada Generation"),
])
def test_a_device_name_inside_a_sentence_is_read_whole(text, gpu):
    assert _facts(text)["gpu"] == (gpu, 1)


@pytest.mark.parametrize(("text", "gpu"), [
    ("torch on Jetson AGX Orin 64GB fails", "Jetson AGX Orin 64GB"),
    ("my GeForce RTX 3060 Laptop GPU runs out of shared memory", "GeForce RTX 3060 Laptop GPU"),
])
def test_a_device_name_without_the_vendor_word_is_read_whole(text, gpu):
    assert _facts(text)["gpu"] == (gpu, 1)


def test_an_aten_op_or_a_bare_sdpa_call_names_the_backend(cli):
    import json

    def backends(text):
        _, out, _ = cli("why", "--no-here", "--format", "json", text)
        return json.loads(out)["understood"]["backends"]

    assert backends("AssertionError: wrong number of dimensions4 for op: "
                    "torch.ops.aten._scaled_dot_product_cudnn_attention.default") == ["sdpa-cudnn"]
    assert backends("  File \"x.py\", line 3, in f\n    out = torch.ops.aten._efficient_attention_forward(q, k, v)") \
        == ["sdpa-efficient"]
    assert "sdpa-math" in backends("    A = scaled_dot_product_attention(Qn, Knn, Vnn, attn_mask = attention_mask)")
    assert "sdpa-flash" in backends("ImportError: AttnProcessor2_0 requires PyTorch 2.0, to use it, please upgrade "
                                    "PyTorch to 2.0.")
    assert backends("    out = my_scaled_dot_product_attention(q, k, v)") == []


def test_a_head_dim_a_message_says_it_accepts_is_not_the_users(cli):
    import json

    text = "RuntimeError: custom build: only head_dim=128 supported, got 64"
    _, out, _ = cli("why", "--no-here", "--format", "json", text)
    assert "hdim" not in json.loads(out)["understood"]["facts"]
    _, out, _ = cli("why", "--no-here", "--format", "json", "training with head_dim=192 fails on the 4090")
    assert json.loads(out)["understood"]["facts"]["hdim"]["value"] == 192


def test_a_gpu_or_version_a_requirement_names_is_not_the_machine_the_text_ran_on() -> None:
    assert "gpu" not in _facts("Head dim > 64 backward requires A100 or H100")
    assert "gpu" not in _facts("this kernel only supports H100; got capability 8.6")
    assert _facts("I run on an H100 and it fails with CUDA error: no kernel image")["gpu"] == ("H100", 1)
    assert _facts("It fails only on RTX 4090 (a 3090 is fine)")["gpu"][0] == "RTX 4090"
    assert _facts("on a T4. Flash attention requires A100 or newer")["gpu"] == ("T4", 1)


def test_a_config_field_the_text_gives_several_values_of_is_no_fact():
    reading = read_text("- causal=False headdim=64 batch=32 seqlen=512: TypeError('x')\n"
                        "- causal=False headdim=128 batch=16 seqlen=512: TypeError('x')", _catalogue())
    assert "hdim" not in reading.facts and reading.facts["seqlen_q"].value == 512
    assert any(note.startswith("hdim: 64, 128 (several values") for note in reading.ignored)
    assert _facts("headdim=64\nheaddim=64")["hdim"] == (64, 1)  # the same value twice is one value


def test_fp8_inputs_are_a_dtype_and_an_fp8_kv_cache_is_not():
    assert _facts("FA4-CuTe-FP8 status: FAILED")["dtype"] == ("fp8", 1)
    assert _facts("q = q.to(torch.float8_e4m3fn)")["dtype"] == ("fp8", 1)
    assert _facts("kv_cache_dtype=fp8 dtype=bf16")["dtype"] == ("bf16", 1)
    assert "dtype" not in _facts("vllm serve model --kv-cache-dtype fp8")


def test_why_reads_the_text_without_a_gpu_flag_that_names_several(cli) -> None:
    """A thread that says "RTX 3090 / RTX 5090" gives no one GPU: `why` reads the text without one and says so, as
    for another vendor's GPU; `explain`, which answers for one GPU, still refuses it."""
    import json

    text = "RuntimeError: FlashAttention only supports Ampere GPUs or newer."
    code, out, err = cli("why", text, "--no-here", "--format", "json", "--gpu", "RTX 3090 / RTX 5090")
    assert code in (0, 1), err
    dropped = json.loads(out)["understood"]["dropped"]
    assert any("RTX 3090 / RTX 5090" in d and "several GPUs" in d and "without a GPU" in d for d in dropped)
    code, _, err = cli("explain", "--backend", "flash-attn-2", "--hdim", "128", "--gpu", "RTX 3090 / RTX 5090")
    assert code == 2 and "several GPUs" in err


def test_a_hub_kernels_repository_names_the_flash_attn_it_builds() -> None:
    """transformers loads kernels-community/flash-attn2, vllm-flash-attn3 or flash-attn4 from the hub for
    attn_implementation flash_attention_2/3/4 (modeling_flash_attention_utils.py@wheel:transformers-5.24.0), whose
    cache folder is models--kernels-community--<name>."""
    catalogue = tuple(load_catalogue())
    for text, backend in (("Cannot find a build variant for this system in kernels-community/flash-attn2", "flash-attn-2"),
                          ("snapshots of models--kernels-community--flash-attn/abc", "flash-attn-2"),
                          ("loading kernels-community/vllm-flash-attn3 from the hub", "flash-attn-3"),
                          ("kernels-community/flash-attn4 has no build for sm80", "flash-attn-4")):
        assert read_text(text, catalogue).backends == (backend,), text
    assert not read_text("kernels-community/flash-attn-cute and kernels-community/activation", catalogue).backends
