"""The GPU catalogue (attndoctor/data/gpus.toml) and name matching."""

from __future__ import annotations

from importlib import resources

import pytest

from attndoctor.errors import UsageError
from attndoctor.gpus import (
    GpuSpec,
    other_vendor,
    gpu_catalogue,
    gpu_names,
    lookup_gpu,
    normalize_gpu_name,
    parse_catalogue,
    parse_sm,
    resolve_gpu,
    sm_table,
)

REQUIRED = ["V100", "T4", "A10", "A100 40GB", "A100 80GB", "L4", "L40S", "RTX 3090", "RTX 4090", "RTX 5090",
            "H100 PCIe", "H100 SXM", "H100 NVL", "H200", "GH200", "B200", "GB200", "RTX PRO 6000 Blackwell"]


def test_catalogue_is_shipped_as_package_data() -> None:
    path = resources.files("attndoctor") / "data" / "gpus.toml"
    assert path.is_file()


def test_catalogue_has_the_required_gpus() -> None:
    names = gpu_names()
    for name in REQUIRED:
        assert name in names
    assert len(names) == len(set(names))


def test_catalogue_is_read_once() -> None:
    assert gpu_catalogue() is gpu_catalogue()


@pytest.mark.parametrize("spec", gpu_catalogue(), ids=lambda s: s.name)
def test_every_entry_is_complete(spec: GpuSpec) -> None:
    assert spec.sm in sm_table()
    assert spec.arch == sm_table()[spec.sm].arch and spec.smem_per_block_optin_kib
    assert spec.source.startswith("https://")
    peaks = (spec.bf16_tflops, spec.fp16_tflops, spec.fp8_tflops)
    if all(p is None for p in peaks):
        assert spec.bandwidth_gbs is None, "a bandwidth comes from the datasheet that gives the peaks"
        assert spec.tflops("bf16") is None and spec.tflops("fp16") is None
        return
    assert None not in peaks, "a datasheet gives every peak or none"
    assert spec.memory_gib and spec.bandwidth_gbs
    assert spec.fp16_tflops > 0
    if spec.sm >= 80:
        assert spec.bf16_tflops > 0, "Ampere and later have bf16 tensor cores"
    else:
        assert spec.bf16_tflops == 0
    if spec.sm >= 89:
        assert spec.fp8_tflops > spec.bf16_tflops, "fp8 runs at about twice the bf16 rate"
    else:
        assert spec.fp8_tflops == 0


def test_dense_figures_are_half_the_sparse_datasheet_figures() -> None:
    h100 = lookup_gpu("H100 SXM")
    assert h100 is not None
    assert (h100.bf16_tflops, h100.fp8_tflops, h100.bandwidth_gbs) == (989.5, 1979, 3350)
    b200 = lookup_gpu("B200")
    assert b200 is not None and (b200.bf16_tflops, b200.fp8_tflops) == (2250, 4500)
    assert lookup_gpu("L40S").tflops("fp8") == 733  # type: ignore[union-attr]
    assert lookup_gpu("A100").tflops("fp8") == 0.0  # type: ignore[union-attr]
    assert lookup_gpu("A100").tflops("fp32") == 0.0  # type: ignore[union-attr]


def test_spec_is_frozen() -> None:
    spec = lookup_gpu("H100")
    assert spec is not None
    with pytest.raises(AttributeError):
        spec.sm = 80  # type: ignore[misc]
    assert spec.compute_capability == "9.0"


@pytest.mark.parametrize("text, name, sm", [
    ("H100", "H100 SXM", 90),
    ("h100", "H100 SXM", 90),
    ("NVIDIA H100", "H100 SXM", 90),
    ("h100-sxm", "H100 SXM", 90),
    ("H100_SXM", "H100 SXM", 90),
    ("  H100 SXM5  ", "H100 SXM", 90),
    ("h100 80gb hbm3", "H100 SXM", 90),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 90),
    ("NVIDIA H100 PCIe", "H100 PCIe", 90),
    ("NVIDIA H100 NVL", "H100 NVL", 90),
    ("NVIDIA H200", "H200", 90),
    ("NVIDIA H200 NVL", "H200 NVL", 90),
    ("NVIDIA GH200 480GB", "GH200", 90),
    ("NVIDIA GH200 144G HBM3e", "GH200 144GB", 90),
    ("A100", "A100 80GB", 80),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB", 80),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB", 80),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB", 80),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 80),
    ("NVIDIA A10", "A10", 86),
    ("NVIDIA A10G", "A10G", 86),
    ("Tesla V100-SXM2-32GB", "V100", 70),
    ("Tesla V100-PCIE-16GB", "V100 PCIe", 70),
    ("Tesla T4", "T4", 75),
    ("NVIDIA L4", "L4", 89),
    ("NVIDIA L40", "L40", 89),
    ("NVIDIA L40S", "L40S", 89),
    ("RTX4090", "RTX 4090", 89),
    ("rtx-4090", "RTX 4090", 89),
    ("NVIDIA GeForce RTX 4090", "RTX 4090", 89),
    ("NVIDIA GeForce RTX 3090", "RTX 3090", 86),
    ("NVIDIA GeForce RTX 5090", "RTX 5090", 120),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", 89),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell", 120),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell", 120),
    ("NVIDIA B200", "B200", 100),
    ("NVIDIA GB200", "GB200", 100),
])
def test_lookup_gpu_matches_names_aliases_and_nvml_names(text: str, name: str, sm: int) -> None:
    spec = lookup_gpu(text)
    assert spec is not None, text
    assert (spec.name, spec.sm) == (name, sm)


@pytest.mark.parametrize("text", [
    "", "   ", "sm90", "B400", "H300", "RTX 4090 Ti", "RTX 3080 SUPER", "GTX 1080 SUPER", "L4000", "A10000",
    "foo", "H1000", "Quadro RTX 7000",
])
def test_lookup_gpu_does_not_guess(text: str) -> None:
    assert lookup_gpu(text) is None


def test_lookup_gpu_accepts_none() -> None:
    assert lookup_gpu(None) is None


def test_a_digit_never_continues_a_model_number() -> None:
    # L40 must not be taken for an L4 with a suffix, nor A100 for an A10.
    assert lookup_gpu("NVIDIA L40").name == "L40"  # type: ignore[union-attr]
    assert lookup_gpu("A100-SXM4").name == "A100 80GB"  # type: ignore[union-attr]
    # a memory size may follow a known name
    assert lookup_gpu("NVIDIA H100 80GB").name == "H100 SXM"  # type: ignore[union-attr]


def test_normalize_gpu_name() -> None:
    assert normalize_gpu_name("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert normalize_gpu_name("Tesla V100-SXM2-32GB") == "v100sxm232gb"
    assert normalize_gpu_name("h100_sxm") == normalize_gpu_name("H100 SXM") == "h100sxm"


@pytest.mark.parametrize("text, expected", [
    ("H100", ("H100 SXM", 90)),
    ("A100", ("A100 80GB", 80)),
    ("L40S", ("L40S", 89)),
    ("RTX4090", ("RTX 4090", 89)),
    ("B200", ("B200", 100)),
    ("sm90", ("sm90", 90)),
    ("SM90", ("sm90", 90)),
    ("sm_90", ("sm90", 90)),
    ("sm-90", ("sm90", 90)),
    ("sm90a", ("sm90", 90)),
    ("sm100a", ("sm100", 100)),
    ("sm_100f", ("sm100", 100)),
    ("sm120", ("sm120", 120)),
    ("compute_89", ("sm89", 89)),
    ("9.0", ("sm90", 90)),
    ("8.6", ("sm86", 86)),
    ("10.0", ("sm100", 100)),
    ("12.0", ("sm120", 120)),
])
def test_resolve_gpu(text: str, expected: tuple[str, int]) -> None:
    assert resolve_gpu(text) == expected


@pytest.mark.parametrize("text", ["", "  ", "foo", "H1000", "sm5", "sm_9", "sm999", "99.0", "9", "9.0.1", "1.2.3",
                                  "h100; rm -rf /", "x" * 300])
def test_resolve_gpu_rejects_unknown_names_with_one_line(text: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_gpu(text)
    message = str(info.value)
    assert "\n" not in message
    assert "sm90" in message
    assert "nearest known: " in message or "H100" in message
    assert len(message) < 200


def test_parse_sm() -> None:
    assert parse_sm("sm_90") == 90
    assert parse_sm("9.0") == 90
    assert parse_sm("H100") is None
    assert parse_sm("sm_2") is None


@pytest.mark.parametrize(("text", "sm"), [("compute capability 7.5", 75), ("Compute Capability: 8.6", 86),
                                          ("CC 8.9", 89), ("capability (8, 6)", 86), ("(9, 0)", 90),
                                          ("CUDA capability sm_120", 120), ("compute 12.0", 120)])
def test_a_compute_capability_as_tools_and_people_print_it(text: str, sm: int) -> None:
    """nvidia-smi --query-gpu=compute_cap, torch.cuda.get_device_capability() and the words people write."""
    assert resolve_gpu(text) == (f"sm{sm}", sm)


def _entry(**changes: object) -> str:
    fields = {"name": '"X1"', "aliases": '["x-1"]', "sm": "90", "memory_gib": "80", "bf16_tflops": "1",
              "fp16_tflops": "1", "fp8_tflops": "2", "bandwidth_gbs": "100", "source": '"https://example.com/x"'}
    fields.update({k: str(v) for k, v in changes.items()})
    return "[[gpu]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v != "DROP")


def test_parse_catalogue_accepts_a_good_entry() -> None:
    (spec,) = parse_catalogue(_entry())
    assert spec == GpuSpec(name="X1", sm=90, memory_gib=80, bf16_tflops=1, fp16_tflops=1, fp8_tflops=2,
                           bandwidth_gbs=100, source="https://example.com/x", aliases=("x-1",))


@pytest.mark.parametrize("changes, fragment", [
    ({"sm": '"90"'}, "sm"),
    ({"sm": "DROP"}, "sm"),
    ({"source": '"datasheet"'}, "source"),
    ({"bf16_tflops": "-1"}, "bf16_tflops"),
    ({"bandwidth_gbs": "0"}, "bandwidth_gbs"),
    ({"memory_gib": "0"}, "memory_gib"),
    ({"aliases": '"x"'}, "aliases"),
    ({"colour": '"green"'}, "unknown key"),
])
def test_parse_catalogue_rejects_bad_entries(changes: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_catalogue(_entry(**changes))


def test_parse_catalogue_rejects_an_alias_shared_by_two_gpus() -> None:
    text = _entry() + _entry(name='"X2"', aliases='["X 1"]')
    with pytest.raises(ValueError, match="also a name of X1"):
        parse_catalogue(text)


def test_parse_catalogue_rejects_an_empty_file() -> None:
    with pytest.raises(ValueError):
        parse_catalogue("")


def _sm_table(**changes: object) -> str:
    fields = {"sm": "90", "arch": '"Hopper"', "smem_per_block_optin_kib": "227", "source": '"https://example.com/s"'}
    fields.update({k: str(v) for k, v in changes.items()})
    return "[[sm]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v != "DROP")


def test_parse_catalogue_fills_arch_and_shared_memory_from_the_sm_table() -> None:
    (spec,) = parse_catalogue(_sm_table() + _entry())
    assert (spec.arch, spec.smem_per_block_optin_kib) == ("Hopper", 227)
    (bare,) = parse_catalogue(_sm_table() + _entry(bf16_tflops="DROP", fp16_tflops="DROP", fp8_tflops="DROP",
                                                   bandwidth_gbs="DROP", memory_gib="DROP"))
    assert bare.tflops("bf16") is None and bare.bandwidth_gbs is None and bare.memory_gib is None


@pytest.mark.parametrize("text, fragment", [
    (_sm_table(arch='"Fermi"') + _entry(), "arch"),
    (_sm_table(smem_per_block_optin_kib="0") + _entry(), "smem_per_block_optin_kib"),
    (_sm_table(source='"guide"') + _entry(), "source"),
    (_sm_table(colour='"green"') + _entry(), "unknown key"),
    (_sm_table() + _sm_table() + _entry(), "given twice"),
    (_sm_table(sm="80") + _entry(), "has no \\[\\[sm\\]\\] table"),
])
def test_parse_catalogue_rejects_bad_sm_tables(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_catalogue(text)


def test_an_architecture_name_is_its_compute_capability_or_a_usage_error():
    """'Hopper' is sm90; 'Blackwell' spans several compute capabilities, so it names them and asks for one."""
    from attndoctor.errors import UsageError
    from attndoctor.gpus import resolve_gpu

    assert resolve_gpu("Turing") == ("sm75", 75) and resolve_gpu("NVIDIA Hopper") == ("sm90", 90)
    assert resolve_gpu("Ada Lovelace") == ("sm89", 89)
    with pytest.raises(UsageError, match=r"several compute capabilities \(sm100, .*sm120"):
        resolve_gpu("Blackwell")


def test_an_architecture_of_several_compute_capabilities_is_swept(cli):
    """--gpu Blackwell: a verdict every Blackwell compute capability agrees on is definite, else it depends."""
    import json

    code, out, err = cli("explain", "--hdim", "128", "--train", "--gpu", "Blackwell", "--backend", "flash-attn-3",
                         "--backend", "sdpa-math", "--format", "json")
    assert code in (0, 1), err
    verdicts = {v["backend"]: v for v in json.loads(out)["results"][0]["verdicts"]}
    assert verdicts["flash-attn-3"]["status"] == "unsupported"
    assert "any Blackwell (sm100 to sm121) GPU" in verdicts["flash-attn-3"]["findings"][0]["message"]


@pytest.mark.parametrize("text, name", [
    ("8x NVIDIA H100 80GB HBM3", "H100 SXM"), ("2x RTX 4090", "RTX 4090"), ("8 x A100", "A100 80GB"),
    ("NVIDIA GeForce RTX 4090 x 8", "RTX 4090"), ("RTX Quadro 8000", "Quadro RTX 8000"),
    ("p4000", "Quadro P4000"), ("Quadro RTX 6000", "Quadro RTX 6000"),
    ("A100x8", "A100 80GB"), ("H100x8 80GB", "H100 SXM"), ("DGX H100", "H100 SXM"), ("NVIDIA DGX B200", "B200"),
    ("HGX H200", "H200"),
])
def test_names_with_a_count_another_word_order_or_without_quadro(text: str, name: str) -> None:
    spec = lookup_gpu(text)
    assert spec is not None and spec.name == name


@pytest.mark.parametrize("text, expected", [("Blackwell SM120", ("sm120", 120)), ("NVIDIA sm_86 GPU", ("sm86", 86)),
                                            ("SM107 (Rubin)", ("sm107", 107)),
                                            ("RTX 4090 (sm_89)", ("RTX 4090", 89))])
def test_an_architecture_written_beside_its_compute_capability(text: str, expected: tuple[str, int]) -> None:
    """A name with its architecture in parentheses is the named GPU, where the two agree."""
    assert resolve_gpu(text) == expected


@pytest.mark.parametrize("text", ["Hopper SM120", "RTX 4090 sm80", "8x", "x8"])
def test_a_contradictory_or_empty_name_stays_unknown(text: str) -> None:
    with pytest.raises(UsageError):
        resolve_gpu(text)


@pytest.mark.parametrize("text", ["MI350X", "AMD Radeon RX 9070 (gfx1201)", "AMD Instinct MI300X", "Intel Arc A770",
                                  "Ascend 910B", "Huawei Ascend NPU", "Apple M2 Max", "M3 Ultra", "TPU v5e"])
def test_another_vendor_gpu_is_named_as_such(text: str) -> None:
    with pytest.raises(UsageError, match="not an NVIDIA GPU"):
        resolve_gpu(text)


@pytest.mark.parametrize("text, other", [("MI350X", True), ("AMD Radeon RX 9070 (gfx1201)", True), ("H100", False),
                                         ("rtx 3800ti", False), ("", False), ("Tesla M4", False), ("M3 Max", True),
                                         ("rx7900GRE", True), ("RX 7900 XTX", True), ("RX6800", True),
                                         ("W7900", True), ("Radeon Pro W6800", True), ("RTX 4090", False),
                                         ("RTX 6000 Ada", False), ("rtx2080", False), ("Radeon VII", True)])
def test_other_vendor_is_told_apart_from_an_unknown_nvidia_name(text: str, other: bool) -> None:
    assert other_vendor(text) is other


def test_why_reads_the_text_without_a_gpu_of_another_vendor() -> None:
    from attndoctor.environment import environment_from_flags
    from attndoctor.why.service import explain_text

    answer = explain_text("RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
                          base_env=environment_from_flags({}), env_flags={"gpu": "MI350X"})
    assert answer.environment.gpu is None and answer.cause is not None
    assert any("MI350X" in d and "not an NVIDIA GPU" in d for d in answer.dropped)
    with pytest.raises(UsageError, match="nearest known"):
        explain_text("RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
                     base_env=environment_from_flags({}), env_flags={"gpu": "rtx 3800ti"})


def test_a_name_and_an_architecture_that_disagree_are_refused() -> None:
    with pytest.raises(UsageError, match=r"names RTX 4090 \(sm89\) and sm90; give one"):
        resolve_gpu("RTX 4090 (sm_90)")


def test_a_virtual_gpu_is_its_board():
    """nvidia-smi inside a VM names the board and a vGPU profile (<board>-<GB><series>)."""
    from attndoctor.gpus import lookup_gpu
    assert lookup_gpu("NVIDIA L40S-48Q").name == "L40S"
    assert lookup_gpu("GRID T4-16Q").name == "T4"
    assert lookup_gpu("NVIDIA A10-24Q").sm == 86
    assert lookup_gpu("NVIDIA Foo-8Q") is None
    assert lookup_gpu("NVIDIA T4G").name == "T4" and lookup_gpu("NVIDIA GeForce MX450").sm == 75


def test_jetpack_6_names_an_orin_and_jetpack_5_names_none():
    """JetPack 6 runs on the Orin modules only; JetPack 5 also runs on Xavier, so it does not name one architecture."""
    assert resolve_gpu("Jetson (JetPack 6)") == ("Jetson Orin", 87)
    assert resolve_gpu("JetPack 6.2") == ("Jetson Orin", 87)
    with pytest.raises(UsageError):
        resolve_gpu("Jetson (JetPack 5)")


def test_a_geforce_series_names_the_architecture_its_models_share():
    assert resolve_gpu("RTX 50XX") == ("RTX 50 series", 120)
    assert resolve_gpu("NVIDIA GeForce RTX 40 Series") == ("RTX 40 series", 89)
    assert resolve_gpu("RTX 20-series") == ("RTX 20 series", 75)  # the RTX 2000 Ada workstation card is not one
    for unknown in ("RTX 60xx", "RTX 50"):
        with pytest.raises(UsageError):
            resolve_gpu(unknown)


def test_a_short_form_inside_names_of_one_architecture_resolves_to_the_shortest():
    assert resolve_gpu("pro6000") == ("RTX PRO 6000 Blackwell", 120)
    for unknown in ("gh200x", "rtx 3800ti"):  # in no name; nearest names are offered instead
        with pytest.raises(UsageError, match="nearest known"):
            resolve_gpu(unknown)


@pytest.mark.parametrize("text, name, sm", [
    ("Tesla K80", "K80", 37), ("NVIDIA Tesla K40m", "K40", 35), ("GeForce GTX TITAN X", "GTX TITAN X", 52),
    ("GTX Titan X", "GTX TITAN X", 52), ("TITAN X", "TITAN X (Pascal)", 61), ("GTX 980 Ti", "GTX 980 Ti", 52),
    ("Tesla M40 24GB", "M40", 52), ("GTX 750 Ti", "GTX 750 Ti", 50), ("Jetson Nano", "Jetson Nano", 53),
    ("GTX 780 Ti", "GTX 780 Ti", 35), ("GTX 680", "GTX 680", 30), ("Jetson TK1", "Jetson TK1", 32),
    ("Quadro M6000 24GB", "Quadro M6000 24GB", 52), ("Jetson Xavier", "Jetson AGX Xavier", 72),
])
def test_kepler_and_maxwell_gpus_are_known(text: str, name: str, sm: int) -> None:
    """NVIDIA's legacy compute capability list: old cards still run attention code, and their users ask why it fails."""
    spec = lookup_gpu(text)
    assert spec is not None and (spec.name, spec.sm) == (name, sm)


@pytest.mark.parametrize("text, expected", [
    ("Jetson Xavier (CC 7.2)", ("Jetson AGX Xavier", 72)), ("Some Board (CC 8.7)", ("sm87", 87)),
    ("Tesla K80 (compute capability 3.7)", ("K80", 37)),
])
def test_a_compute_capability_in_parentheses_beside_a_name(text: str, expected: tuple[str, int]) -> None:
    """"(CC 7.2)" is the capability whether or not the name before it is known; a known name must agree with it."""
    assert resolve_gpu(text) == expected


def test_a_capability_in_parentheses_that_contradicts_the_name_is_refused() -> None:
    with pytest.raises(UsageError):
        resolve_gpu("Tesla K80 (CC 7.2)")
    with pytest.raises(UsageError, match="give one"):
        resolve_gpu("Board (CC 7.2) (CC 8.0)")


@pytest.mark.parametrize("text, first, last", [
    ("compute capability below 8.0", 30, 75), ("pre-Ampere", 30, 75), ("older than Hopper", 30, 89),
    ("CC < 7.5", 30, 72), ("GPUs before Volta", 30, 62),
])
def test_gpus_older_than_a_capability_or_an_architecture_are_a_family(text, first, last):
    """'compute capability below 8.0', 'pre-Ampere': every catalogued compute capability under the bound, swept."""
    from attndoctor.gpus import arch_family

    family = arch_family(text)
    assert family[0] == first and family[-1] == last and all(sm < family[-1] + 1 for sm in family)


def test_a_family_of_older_gpus_is_swept_by_explain(cli):
    import json

    code, out, err = cli("explain", "--hdim", "128", "--dtype", "fp16", "--gpu", "compute capability below 8.0 (per "
                         "the maintainer)", "--backend", "flash-attn-2", "--format", "json")
    assert code in (0, 1), err
    verdict = json.loads(out)["results"][0]["verdicts"][0]
    assert verdict["status"] == "unsupported" and "sm30 to sm75" in verdict["findings"][0]["message"]


@pytest.mark.parametrize("text, expected", [
    ("B300/GB300 (SM 10.3 / sm_103)", ("sm103", 103)),  # one capability written two ways in one remark
    ("NVIDIA Blackwell 6000 Pro", ("RTX PRO 6000 Blackwell", 120)),  # the words of one architecture's names
    ("RTX 4000 series", ("RTX 40 series", 89)), ("RTX 3000 series", ("RTX 30 series", 86)),
    ("RTX 5000 series", ("RTX 50 series", 120)),
    ("32G V100", ("V100", 70)), ("4*80G A100", ("A100 80GB", 80)), ("4×A40", ("A40", 86)),
])
def test_gpu_names_as_threads_write_them(text: str, expected: tuple[str, int]) -> None:
    """Counts without spaces ('4×A40'), memory before the name ('32G V100'), a series in thousands, the words of a
    name in another order, a capability written twice in one remark."""
    assert resolve_gpu(text) == expected


@pytest.mark.parametrize("text", ["RTX 5000s", "RTX 6000 Workstation", "RTX 5000 Laptop", "Ada Blackwell 6000",
                                  "(SM 10.3 / sm_90)"])
def test_gpu_names_that_stay_ambiguous(text: str) -> None:
    """A series needs the word; descriptor words alone do not pick an architecture; words of several architectures'
    names; two capabilities that disagree."""
    with pytest.raises(UsageError):
        resolve_gpu(text)
