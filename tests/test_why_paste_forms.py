"""A text pasted through a web page, a chat, a notebook or a colored terminal gives the answer its plain form gives:
the characters those add (no-break spaces, zero-width marks, HTML entities, full-width punctuation, color codes,
indentation) are not the library's words."""

from __future__ import annotations

import functools
import html
import json
import textwrap

import pytest

from attndoctor.why.catalogue import load_catalogue
from attndoctor.why.reader import read_text

from test_why import CORPUS, answer

FORMS = {
    "no-break spaces (a web page, a chat)": lambda t: t.replace(" ", "\u00a0"),
    "narrow no-break and ideographic spaces": lambda t: t.replace(" ", "\u202f", 3).replace(" ", "\u3000", 3),
    "zero-width spaces (a chat's line breaking)": lambda t: t.replace("_", "_\u200b").replace(".", ".\u200b"),
    "HTML entities (a page's source, an e-mail)": lambda t: html.escape(t),
    "full-width punctuation (an East Asian keyboard)": lambda t: t.replace(":", "\uff1a", 1).replace("(", "\uff08"),
    "color codes around words": lambda t: t.replace("Error", "\x1b[1;31mError\x1b[0m").replace(": ", "\x1b[0m: "),
    "indentation": lambda t: "\n".join("    " + line for line in t.splitlines()),
    "torchrun's rank tags": lambda t: "\n".join("[rank0]:[rank0]: " + line for line in t.splitlines()),
    "docker compose's service column": lambda t: "\n".join("vllm-openai-1  | " + line for line in t.splitlines()),
    "a CI runner's time stamps": lambda t: "\n".join("2026-05-01T12:00:00.1234567Z " + line for line in t.splitlines()),
    "ray's process tags": lambda t: "\n".join("(RayWorkerWrapper pid=1234, ip=10.0.0.1) " + line
                                               for line in t.splitlines()),
    "wrapped at 80 columns (a terminal, a mail)": lambda t: "\n".join(
        part for line in t.splitlines()
        for part in textwrap.wrap(line, 80, drop_whitespace=False, break_on_hyphens=False) or [""]),
    "a mail reply's quote marks": lambda t: "\n".join("> > " + line for line in t.splitlines()),
    "a quoted wrap's indented continuation": lambda t: t.replace(" ", "\n  ", 1).replace("\n", "\n> "),
    "Python logging's time, name and level": lambda t: "\n".join("2024-10-08 08:41:07,252 - train - ERROR - " + line
                                                                    for line in t.splitlines()),
    "Python logging's default level and name": lambda t: "\n".join("ERROR:root:" + line for line in t.splitlines()),
    "loguru's columns": lambda t: "\n".join("2024-10-08 08:41:07.252 | ERROR    | train:main:42 - " + line
                                            for line in t.splitlines()),
    "vLLM's log prefix": lambda t: "\n".join("ERROR 05-27 12:34:56 [core.py:501] " + line for line in t.splitlines()),
    "glog's prefix (C++ libraries)": lambda t: "\n".join("E1128 10:15:42.118301  4411 engine.cc:88] " + line
                                                          for line in t.splitlines()),
    "pytest's error column": lambda t: "\n".join("E       " + line for line in t.splitlines()),
    "a Markdown code fence (an issue, a chat)": lambda t: "```python\n" + t + "\n```",
    "a Markdown code block's indentation over a CI runner's stamps": lambda t: "\n".join(
        "    2026-05-01T12:00:00.1234567Z " + line for line in t.splitlines()),
    "a JSON log record's escaped string": lambda t: '{"level": "ERROR", "message": ' + json.dumps(t) + "}",
}

FLASHINFER = ("flashinfer-cubin version (0.6.13) does not match flashinfer version (0.6.14). Please install the same "
              "version of both packages. Set FLASHINFER_DISABLE_VERSION_CHECK=1 to bypass this check.")
"""vllm-project/vllm#49804's text (the corpus's tuning half): a message whose first word is a placeholder
({distribution} version ...) and whose other wordings begin with a literal."""

XFORMERS = ("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
            "     query       : shape=(1, 4096, 12, 128) (torch.bfloat16)\n"
            "     attn_bias   : <class 'NoneType'>\n"
            "`fa2F@v2.5.7-pt` is not supported because:\n"
            "    requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)\n"
            "    bf16 is only supported on A100+ GPUs\n"
            "`cutlassF-pt` is not supported because:\n"
            "    bf16 is only supported on A100+ GPUs")
"""xformers' list of refusals per operator (the corpus's tuning half, trellis.2-23): which operator a reason belongs
to is read from the header above it."""

TE_WRAPPED = ("RuntimeError: transformer_engine/common/fused_attn/fused_attn_f16_arbitrary_seqlen.cu:418\n"
              "in function operator(): cuDNN Error: THD (ragged offset) is only supported in Hopper and\n"
              "above : 80.")
"""NVIDIA/TransformerEngine#3092's text (the corpus's tuning half): a message the page wrapped over two lines, whose
continuation carries the paste's prefix too."""

QWEN_PADDING = ("ValueError: You are attempting to perform batched generation with padding_side='right' this may lead "
                "to unexpected behaviour for Flash Attention version of Qwen2. Make sure to  call "
                "`tokenizer.padding_side  = 'left'` before tokenizing the input.")
"""OpenRLHF/OpenRLHF#333's text (the corpus's tuning half): a message three lines long once wrapped."""

SAGE_ASSERT = ('SageAttention/sageattention/core.py", line 590, in sageattn_qk_int8_pv_fp8_cuda\n'
               '    assert head_dim in [64, 128], "sageattn_qk_int8_pv_fp16_cuda only support head_dim [64, 128]."')
"""thu-ml/SageAttention#62's text (the corpus's tuning half): an assert's line with no exception line after it."""

VLLM_CUT = ("untimeError: Worker failed with error 'Kimi-K3 fp8 KV cache requires an fp8 prefill query; enable "
            "--attention-config '{\"use_prefill_query_quantization\": true}'.', please check the stack trace above for "
            "the root cause ")
"""vllm-project/vllm#50056's text (the corpus's tuning half): one line whose exception class the paste cut."""

TEXTS = [(case[0], case[1], case[2]) for case in CORPUS] + [("flashinfer's version check", FLASHINFER, {}),
                                                              ("an assert's line alone", SAGE_ASSERT, {}),
                                                              ("a line that lost its start", VLLM_CUT, {}),
                                                              ("xformers' refusals", XFORMERS, {"gpu": "V100"}),
                                                              ("a wrapped TransformerEngine message", TE_WRAPPED,
                                                               {"gpu": "A100", "cudnn": "9.10.2"}),
                                                              ("a long transformers message", QWEN_PADDING, {})]


@functools.cache
def plain_cause(index):
    source, text, flags = TEXTS[index]
    cause = answer(text, **flags).cause
    return cause and cause.id


@pytest.mark.parametrize("form", FORMS)
def test_a_pasted_form_gives_the_plain_texts_answer(form):
    changed = []
    for index, (source, text, flags) in enumerate(TEXTS):
        pasted = answer(FORMS[form](text), **flags).cause
        if plain_cause(index) != (pasted and pasted.id):
            changed.append(f"{source}: {plain_cause(index)} -> {pasted and pasted.id}")
    assert not changed, changed


def test_a_report_a_launcher_prefixed_still_gives_its_facts():
    report = "PyTorch version: 2.5.1+cu124\nCUDA used to build PyTorch: 12.4\nPython version: 3.11.9 (main)"
    plain = {k: f.value for k, f in read_text(report, load_catalogue()).facts.items()}
    assert {"torch", "cuda", "python"} <= set(plain)
    for prefix in ("[rank0]: ", "trainer-1  | ", "May 01 12:00:00 node7 python[4411]: ", "0: "):
        decorated = "\n".join(prefix + line for line in report.splitlines())
        assert {k: f.value for k, f in read_text(decorated, load_catalogue()).facts.items()} == plain, prefix


def test_html_entities_are_read_only_where_the_text_has_them():
    """A C++ template's '&&' or a shell's '&' are the library's own characters, not an entity."""
    text = ("RuntimeError: FlashAttention only supports Ampere GPUs or newer. && echo done; a &lt b")
    assert answer(text).cause.id == answer(text.replace("&lt", "&lt;")).cause.id
