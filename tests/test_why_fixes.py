"""A fix for a message no rule models is one the user can apply to that kind of problem."""

import json

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


def fixes(cli, text: str) -> list[str]:
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    assert code in (0, 1), err
    doc = json.loads(out)
    assert "oom" in doc["cause"]["topics"]
    return doc["cause"]["fixes"]


def test_out_of_memory_in_flex_attention_is_fixed_by_compiling_it(cli):
    frames = OOM + '\n  File "/venv/lib/python3.12/site-packages/torch/nn/attention/flex_attention.py", line 1300, in flex_attention'
    assert fixes(cli, frames)[0].startswith("compile it: torch.compile(flex_attention)")


def test_out_of_memory_is_not_a_setting_to_change_to_what_a_check_accepts(cli):
    found = fixes(cli, OOM)
    assert not any(f.startswith("change the oom") for f in found)
    assert found[0].startswith("make the call need less memory")
