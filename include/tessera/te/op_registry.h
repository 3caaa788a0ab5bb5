// The spec-driven operator registry of the CLI: "NAME:key=value,..." -> a ready Compute.
//
// Ops and their keys (a key without default is required; every size must be positive; 0/1 keys
// are flags). Each op's inputs are placeholders named after their role (a, b, x, w, ...), all f32.
//
//   matmul            m n k                       a[m,k] x b[k,n]
//   dense             m n k bias=0 relu=0          x[m,k], w[n,k], (bias[n])
//   batch_matmul      b m n k                     a[b,m,k] x b[b,k,n]
//   conv2d            n=1 c h w k r=3 s=r stride=1 pad=0 dilation=1 groups=1 bias=0 relu=0
//                                                 x[n,c,h,w], w[k,c/groups,r,s], (bias[k])
//   depthwise_conv2d  n=1 c h w r=3 s=r stride=1 pad=0 dilation=1 multiplier=1 bias=0 relu=0
//   max_pool2d        n=1 c h w kernel=2 stride=kernel pad=0
//   avg_pool2d        n=1 c h w kernel=2 stride=kernel pad=0 count_include_pad=0
//   global_avg_pool2d n=1 c h w
//   relu sigmoid tanh erf gelu exp sqrt   m=1 n    x[m,n]
//   add mul           m n broadcast=1             a[m,n] op b[n] (broadcast=1) or b[m,n]
//   softmax           m n                         over the last axis
//   layer_norm        m n                         over the last axis, gamma[n], beta[n], eps 1e-5
//   reduce_sum reduce_mean reduce_max   m n       x[m,n] -> [m] over the last axis
//   transpose         m n                         x[m,n] -> [n,m]
//   concat            m n parts=2                 parts (<= 64) tensors [m,n] -> [m, parts*n]
//   pad               m n pad=1                   constant 0, [m+2pad, n+2pad]
//   slice             m n start=0 end=n step=1    x[m,n] -> x[:, start:end:step]
//
// flops (OpInstance::flops): 2*m*n*k for matmul/dense (b times that for batch_matmul),
// 2*N*K*OH*OW*(C/groups)*R*S for convolutions, output elements * kernel area for windowed
// pools, input elements for reductions, softmax, layer_norm and global pools, output elements
// for the rest.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tessera/te/compute.h"

namespace tessera::te {

/// A parsed spec: op name and key=value pairs in written order.
struct OpSpec {
    std::string name;
    std::vector<std::pair<std::string, int64_t>> params;
};

/// Parses "NAME" or "NAME:key=value,key=value". Names and keys are [a-z0-9_]+ starting with a
/// letter; values are decimal integers (a leading '-' is accepted here so make_op can say the
/// size must be positive). Only syntax is checked here; op names and keys are checked by make_op.
/// Throws UserError naming the bad part: empty text, missing ':' part, `m=` (missing value),
/// `m=abc` (not an integer), a key without '=', a duplicate key, an empty item.
OpSpec parse_op_spec(const std::string& text);

/// A registry op ready to tune: its Compute, its work in flops, its name and the canonical spec
/// (every key of the op, defaults filled in, in the table order: "matmul:m=8,n=8,k=8").
struct OpInstance {
    Compute compute;
    double flops = 0;
    /// Indices into compute.inputs of the weights: inputs that are constants of a model
    /// (conv2d and depthwise_conv2d filters, dense weights), so a schedule may store them in a
    /// packed layout prepared once, outside the timed call (sched::SketchOptions::weight_inputs).
    /// Ascending. matmul's and batch_matmul's b are activations, not weights.
    std::vector<int> weight_inputs;
    std::string name;
    std::string canonical_spec;
};

/// Builds the op. Throws UserError: `unknown op 'matmull' (known: matmul, dense, ...)`,
/// `matmul: unknown key 'q' (accepted: m, n, k)`, `matmul: missing size 'k'`,
/// `matmul: size 'm' must be positive, got -4`, `conv2d: 'pad' must be non-negative, got -1`,
/// `dense: flag 'bias' must be 0 or 1, got 2`, and
/// the op library's shape errors (e.g. groups not dividing the channels).
OpInstance make_op(const OpSpec& spec);
/// parse_op_spec then make_op.
OpInstance make_op(const std::string& text);

/// Names of the registry ops, in the table order above.
std::vector<std::string> list_ops();

/// What values a key accepts.
enum class KeyKind : uint8_t {
    Size,        ///< > 0
    NonNegative, ///< >= 0 (pads)
    Flag,        ///< 0 or 1
};

/// One accepted key of a registry op.
struct OpKey {
    std::string name;
    KeyKind kind = KeyKind::Size;
    bool required = false;     ///< No default: must be given.
    int64_t default_value = 0; ///< When not required and default_from is empty.
    std::string default_from;  ///< Default copied from this other key ("s" defaults to "r").
    std::string doc;           ///< One line.
};
/// The keys of op `name` in canonical order. Throws UserError for an unknown op.
std::vector<OpKey> op_keys(const std::string& name);

} // namespace tessera::te
