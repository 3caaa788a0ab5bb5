// Internal: the affine approximation of a flat buffer index in the loop variables around a
// store, from which the access features (strides, footprints, reuse) are computed, and the
// share of the loop iterations in which a guard holds (the weight of counts under it).
#pragma once

#include <utility>
#include <vector>

#include "tessera/ir/expr.h"

#include "index_program.h"

namespace tessera::cost {

/// index ~= constant + sum_l coef[l] * (loop variable of level l) + lane * lane_stride, for
/// lane in [0, lanes). Levels are the loops around the store, outermost first; levels beyond
/// coef.size() have coefficient 0. Coefficients are doubles because a division by a constant
/// is kept as a fractional coefficient (i / 4 -> 0.25 i): what matters for the features is how
/// fast the index moves with each loop, not the exact value.
struct LinearForm {
    std::vector<double> coef;
    double constant = 0;
    double lane_stride = 0;
    int lanes = 1;
    /// False when some part was not affine (a product of variables, a modulo, a loaded index,
    /// an unknown variable) and was approximated; measure() then refines the coefficients.
    bool exact = true;
    /// Per level, how much one step of the loop from its minimum moves the index (the local
    /// stride), when it differs from coef (set by measure(); empty means equal to coef).
    std::vector<double> step;

    double coef_at(size_t level) const { return level < coef.size() ? coef[level] : 0.0; }
    double step_at(size_t level) const {
        return step.empty() ? coef_at(level) : level < step.size() ? step[level] : 0.0;
    }
    bool operator==(const LinearForm& o) const;
};

/// Builds linear forms of index expressions, and estimates guard shares, given the loop
/// variables around the current point (levels) and the Let-bound variables in scope.
class LinearFormBuilder {
  public:
    /// Enters a loop: its variable gets the next level.
    void push_loop(const ir::Variable* var) { loop_vars_.push_back(var); }
    void pop_loop() { loop_vars_.pop_back(); }
    int depth() const { return static_cast<int>(loop_vars_.size()); }

    /// Binds a Let variable to its value (and the value's form) until unbind().
    void bind(const ir::Variable* var, const ir::Expr& value);
    void unbind() { lets_.pop_back(); }

    /// The form of e (an integer index expression, scalar or a vector of a Ramp).
    LinearForm form_of(const ir::Expr& e);

    /// Refines an inexact form of `index` by evaluating it: for each level, coef becomes the
    /// average slope over the loop's range (so the span, and the footprint, of a monotonic
    /// index such as a fused loop's div/mod decomposition is right) and step the change over
    /// the loop's first iteration, with the other loops at their minimum. mins and extents
    /// are per level (depth() entries). Exact forms are left as they are.
    void measure(LinearForm& form, const ir::Expr& index, const std::vector<int64_t>& mins,
                 const std::vector<int64_t>& extents);

    /// A guard around the current point: its condition and the branch taken (true: then).
    struct Guard {
        ir::Expr condition;
        bool holds;
    };
    /// The share of the iterations of the loops around the current point in which the scalar
    /// bool `condition` holds, among those in which the `enclosing` guards that share a loop
    /// with it take their branch: evaluated on every combination of the values of the loops
    /// they read when there are at most kConditionSamples, otherwise on kConditionSamples
    /// points of a deterministic low-discrepancy sequence. Other loops are at their minimum.
    double fraction_true(const ir::Expr& condition, const std::vector<Guard>& enclosing,
                         const std::vector<int64_t>& mins, const std::vector<int64_t>& extents);
    /// Most evaluations of one condition by fraction_true.
    static constexpr int64_t kConditionSamples = 512;

  private:
    struct LetBinding {
        const ir::Variable* var;
        ir::Expr value;
        LinearForm form;
    };
    /// When `condition == holds` is `x in [first, last]` for the loop x of `level` (an integer
    /// comparison whose sides differ by an exact affine form in x alone), sets them.
    bool single_loop_range(const ir::Expr& condition, bool holds, size_t* level, int64_t* first,
                           int64_t* last);
    /// e compiled for evaluation at loop-variable values (Let-bound variables substituted).
    IndexProgram program_of(const ir::Expr& e) const;

    std::vector<const ir::Variable*> loop_vars_;
    std::vector<LetBinding> lets_;
    std::vector<int64_t> values_; ///< Loop variable values of the point being evaluated.
};

} // namespace tessera::cost
