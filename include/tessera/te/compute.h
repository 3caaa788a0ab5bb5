// Compute: the tensor-expression DAG of one kernel (inputs, outputs and every stage between).
#pragma once

#include <string>
#include <vector>

#include "tessera/te/tensor.h"

namespace tessera::te {

/// One kernel's tensor program. Lowering makes a function whose parameters are `inputs` then
/// `outputs`, in these orders.
struct Compute {
    std::vector<Tensor> inputs;  ///< Placeholders, in parameter order.
    std::vector<Tensor> outputs; ///< Compute tensors, in parameter order.
    /// Every compute tensor reachable from the outputs, producers before consumers. The order
    /// is deterministic: a depth-first post-order walk from the outputs in order, visiting each
    /// tensor's inputs in first-read order.
    std::vector<Tensor> stages;
    /// Indices into `inputs` of the weights: inputs whose data is fixed when the program is
    /// compiled (a model's initializers, an op's filter), which a schedule may store in a packed
    /// layout prepared once ahead of time (sched::SketchOptions::weight_inputs). Ascending.
    /// Part of the workload key: the same expressions with other weights marked are another
    /// task, since their schedules may differ.
    std::vector<int> weight_inputs;
};

/// Builds a Compute and checks it is closed: every placeholder that the outputs read must be
/// among `inputs`. Throws UserError when a placeholder is missing, an input is not a placeholder,
/// an output is a placeholder, or a tensor is listed twice. Inputs the outputs do not read are
/// kept (they stay parameters).
Compute make_compute(std::vector<Tensor> inputs, std::vector<Tensor> outputs);

/// True when `t` is one of `c.outputs`.
bool is_output(const Compute& c, const Tensor& t);

/// What the Compute's products run on: "int8" when a stage sums dot4_u8s8, "bf16" when one
/// sums dot2_bf16, "f32+f16w" when an f32 output reads f16 weights (Compute::weight_inputs;
/// stored in f16, widened as read), else the dtype of its first output ("f32", "f64", "i32",
/// ...). The precision column of a build's coverage table.
std::string product_precision(const Compute& c);

} // namespace tessera::te
