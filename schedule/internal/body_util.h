// Helpers over stage bodies (tensor expressions): reads, substitution, read redirection.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::sched {

using VarMap = std::unordered_map<const ir::Variable*, ir::Expr>;

/// Calls f for every TensorRead in e (outer reads before the reads in their indices).
void for_each_read(const ir::Expr& e, const std::function<void(const ir::TensorRead*)>& f);

/// e with the variables of `m` replaced (Let bindings inside e are kept as they are).
ir::Expr substitute(const ir::Expr& e, const VarMap& m);

/// e with every Let replaced by its body with the bound variable substituted (for analysis).
ir::Expr inline_lets(const ir::Expr& e);

/// e with reads of `from` redirected to `to` (same indices).
ir::Expr replace_reads(const ir::Expr& e, const ir::Tensor& from, const ir::Tensor& to);

/// True when e uses one of `vars`.
bool uses_any(const ir::Expr& e, const std::vector<const ir::Variable*>& vars);

/// One read of a body, seen from the loop variables `axes` of its stage.
struct AxisRead {
    const ir::TensorNode* tensor = nullptr; ///< What it reads.
    std::vector<bool> uses;   ///< Per axis: some index of the read uses it.
    std::vector<bool> slides; ///< Per axis: some index uses it with a reduce variable (oh + ry).
};

/// Every read of `body` (Lets inlined, in for_each_read order) with the axes its indices use;
/// `reduce_vars` are the stage's reduce variables. One scan shared by the rules that ask which
/// axes a weight, an activation or a window reads.
std::vector<AxisRead> reads_by_axis(const ir::Expr& body, const std::vector<ir::Var>& axes,
                                    const std::vector<const ir::Variable*>& reduce_vars);

/// True when `body` reads at least one tensor and every read indexes its last dimension with
/// exactly `last` (a stage's last axis): that axis walks memory contiguously in every operand.
bool reads_along_last_axis(const ir::Expr& body, const ir::Var& last);

/// The largest reduction treated as a pooling window: its loops may run outside the vector
/// axis (default schedules) and its padded input may be recomputed per window (always_inline).
constexpr int64_t kMaxPoolWindow = 64;

/// A fresh tensor node with the given definition (a stage-local identity; never lowered by
/// lower_default).
ir::Tensor make_tensor(const std::string& name, ir::DataType dtype, std::vector<int64_t> shape,
                       std::vector<ir::Var> axes, ir::Expr body);

} // namespace tessera::sched
