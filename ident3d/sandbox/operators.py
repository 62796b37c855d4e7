"""The operators a submitted graph may call: pure tensor math, nothing else.

An explicit allow-list, not "anything under aten": ATen also holds operators that read and write
files (``from_file``, ``save``), build views from raw strides (``as_strided``, ``_reshape_alias``)
that read outside their storage, construct sparse tensors without bounds checks, draw random numbers,
print, or assert with a message the model chooses. Every operator here computes its output from its
inputs alone and checks the indices and sizes it is given. Any overload of a listed operator is
allowed (``add.Tensor``, ``add.Scalar``, ``add_.Tensor``).

The rule for adding an operator: (1) it is public (no leading underscore: private operators are
backend kernels such as ``_scaled_dot_product_flash_attention_for_cpu``, which takes the batch from
the query and the length from the value without checking the key, and read out of bounds when
crafted); (2) it computes from its inputs alone (no file, random, print or global state); (3) its
kernel checks every size, stride and index it is given; (4) ``tests/test_operator_fuzz.py`` calls it
with crafted shapes, strides and indices and it passes (no crash, no result that depends on memory
outside its inputs, a clear refusal otherwise). What an operator writes and which inputs its output
shares memory with come from its schema, never from this list (``pt2_graph`` reads the alias
annotations; ``effects`` runs the graph on fake tensors, where composite operators show what they
become). ``torch.export.export`` writes public operators (``conv2d``,
``batch_norm``, ``scaled_dot_product_attention``); a program put through ``run_decompositions()``
holds private ones and is refused with the operator's name.

Checks that torch inserts by itself (``_assert_tensor_metadata`` after a ``.to()``, ``_assert_scalar``
for dynamic sizes) compute nothing; they are removed from the graph before it is rebuilt, so their
message text is never shown.
"""

from __future__ import annotations

ATEN = frozenset("""
    convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
    linear addmm mm bmm matmul baddbmm addbmm einsum dot vdot mv outer
    scaled_dot_product_attention
    relu relu_ relu6 leaky_relu leaky_relu_ gelu gelu_ silu silu_ sigmoid sigmoid_ tanh tanh_ elu elu_
    selu selu_ celu celu_ mish mish_ softplus hardswish hardswish_ hardsigmoid hardsigmoid_
    hardtanh hardtanh_ prelu glu log_sigmoid threshold threshold_ softmax log_softmax
    batch_norm layer_norm group_norm instance_norm
    rms_norm
    linalg_vector_norm norm frobenius_norm
    max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices avg_pool1d
    avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
    adaptive_max_pool1d adaptive_max_pool2d
    upsample_nearest2d upsample_bilinear2d upsample_bicubic2d
    pixel_shuffle pixel_unshuffle pad constant_pad_nd reflection_pad1d reflection_pad2d
    replication_pad1d replication_pad2d
    add add_ sub sub_ rsub mul mul_ div div_ true_divide floor_divide remainder fmod pow pow_
    neg neg_ abs abs_ sqrt sqrt_ rsqrt rsqrt_ exp exp_ exp2 expm1 log log_ log2 log10 log1p sin cos tan
    asin acos atan atan2 sinh cosh asinh acosh atanh erf erfc reciprocal reciprocal_ sign sgn
    square clamp clamp_ clamp_min clamp_min_ clamp_max clamp_max_ clip floor ceil round trunc frac
    maximum minimum fmax fmin lerp addcmul addcdiv where masked_fill masked_fill_ nan_to_num
    logical_and logical_or logical_not logical_xor bitwise_not eq ne lt le gt ge isnan isinf isfinite
    sum mean amax amin max min prod var std var_mean std_mean logsumexp cumsum cumprod argmax argmin
    all any count_nonzero
    view reshape flatten unflatten permute transpose t squeeze unsqueeze expand expand_as contiguous
    clone detach alias cat concat concatenate stack hstack vstack split split_with_sizes tensor_split
    chunk unbind slice select narrow index_select gather take_along_dim index repeat tile
    repeat_interleave flip roll movedim swapaxes view_as reshape_as unfold
    to type_as zeros zeros_like ones ones_like full full_like fill fill_ scalar_tensor arange
    lift_fresh_copy copy copy_ sym_size sym_numel sym_stride sym_storage_offset
    dropout dropout_ feature_dropout alpha_dropout
""".split())

# Arguments that put an operator in training mode (random, or batch statistics that it also writes
# into its running buffers): a graph must pass False (its schema names them; ``pt2_graph``).
TRAINING_ARGUMENTS = frozenset({"train", "training"})

# Removed before rebuilding: checks torch inserts, which compute nothing the model returns.
STRIPPED = frozenset({"_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range",
                      "sym_constrain_range_for_size"})

SYMBOLIC = frozenset({f"_operator.{name}" for name in (
    "getitem", "add", "sub", "mul", "floordiv", "truediv", "mod", "neg", "eq", "ne", "lt", "le", "gt",
    "ge", "and_", "or_", "not_")} | {f"torch.{name}" for name in (
        "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite")} | {
    f"math.{name}" for name in ("ceil", "floor", "trunc")})

PREFIX = "torch.ops.aten."


def aten_name(target: str) -> str | None:
    """``convolution`` for ``torch.ops.aten.convolution.default``; None for anything else."""
    if not target.startswith(PREFIX):
        return None
    parts = target[len(PREFIX):].split(".")
    return parts[0] if len(parts) == 2 and parts[0] and parts[1] else None
