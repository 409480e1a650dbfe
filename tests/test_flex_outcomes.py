"""Triton's shared-memory refusals (FlexAttention's compiled kernels) are refusals of the config, not memory outages."""

from __future__ import annotations

import pytest

from attndoctor_kernels.outcomes import classify


@pytest.mark.parametrize("names,message", [
    ("OutOfResources", "out of resource: shared memory, Required: 131074, Hardware limit: 101376. Reducing block "
                       "sizes or `num_stages` may help."),
    (("InductorError", "BackendCompilerFailed", "Exception"),
     "RuntimeError: No valid triton configs. OutOfMemoryError: out of resource: "
     "triton_tem_fused_flex_attention_backward_1 Required: 114688 Hardware limit:101376 Reducing block sizes or "
     "`num_stages` may help."),
    (("BackendCompilerFailed", "Exception"), "backend='inductor' raised: OutOfResources: out of resource: shared "
                                             "memory, Required: 106496, Hardware limit: 101376."),
    (("InductorError", "BackendCompilerFailed", "Exception"),
     "LoweringException: NoValidChoicesError: No choices to select. Provided reason: All choices failed to compile "
     "for backend."),
])
def test_triton_resource_limits_are_rejections(names, message):
    assert classify(names, message) == ("rejected", False)


def test_a_real_out_of_memory_stays_out_of_memory():
    assert classify(("OutOfMemoryError", "RuntimeError"), "CUDA out of memory. Tried to allocate 8.00 GiB") == \
        ("out-of-memory", False)
