// separable_transform_schedule: a 2-D transform done in two 1-D passes (the Winograd input
// transform: the rows of each tile row, then each tile's columns; the output transform: each
// tile's columns, then its rows) computes its first pass one slice at a time, inside the
// loops of the second, instead of writing all of it and reading it back.
//
// The sketch-based default computes the first pass whole at the root (a multi-level tile fuses
// a producer only into an elementwise consumer). resnet18's 56x56 F(4x4) input transform so
// wrote and read back a 1.25 MB first pass: 0.176 ms at one thread on a Zen 4 core, 0.100 at
// two (`tessera op run`). Computed one tile row at a time (89 KB, in L2), its transformed rows
// as register tiles over the alpha rows (each loaded image vector feeds all of them): 0.084
// and 0.049-0.076 ms. Its 28x28 one 0.072 -> 0.040 and 0.107 -> 0.028 ms, the 14x14 one 0.051
// -> 0.025 and 0.060 -> 0.016, the 7x7 F(2x2) one 0.036 -> 0.014 and 0.042 -> 0.008; the
// 56x56 output transform 0.112 -> 0.058 and 0.074 -> 0.030. The whole model untuned, at one
// thread: 19.5 -> 17.7 ms in fp32, 13.4 -> 12.2 in bf16.
//
// Two shapes of second pass Y, told apart by how it reads the first pass P (once):
//   - input form, Y[v, u, c] = sum P[u / U, v / V, ..., c]: Y's loops [u / U (parallel), v /
//     V, u % U, c / lanes, v % V, reduce, c % lanes], P's slice computed per u / U (per v / V
//     when a tile row's slice exceeds kMaxSliceBytes);
//   - output form, Y[..., y, x, c] = sum P[..., f(y / m, x / m), x % m, g(c)]: Y's loops
//     [(outer axes, y / m) fused, parallel, y % m, x / m, x % m, c / lanes, reduce, c % lanes],
//     P's slice (one row of tiles) computed per iteration of the first.
// P's own loops put its reuse axis (reuse_axis) inside its reduce loops: a register tile. An
// elementwise stage after Y (a cast, an epilogue) takes Y's loops and computes Y one vector
// at a time inside them.
#include <algorithm>

#include "../internal/body_util.h"
#include "default_rules.h"
#include "tessera/ir/functor.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// The position in `axes` of the variable `e` divides (`Div`) or reduces (`Mod`) by a
/// constant of at least 2, with that constant; -1 when `e` is not such an expression.
template <typename Node>
int axis_by_constant(const ir::Expr& e, const std::vector<ir::Var>& axes, int64_t* constant) {
    const auto* op = e.as<Node>();
    if (!op)
        return -1;
    const auto* var = op->a.template as<ir::Variable>();
    const auto* imm = op->b.template as<ir::IntImm>();
    if (!var || !imm || imm->value < 2)
        return -1;
    for (size_t k = 0; k < axes.size(); ++k)
        if (axes[k].get() == var) {
            *constant = imm->value;
            return static_cast<int>(k);
        }
    return -1;
}

/// Whether `e` contains `axes[axis] / divisor`.
bool contains_quotient(const ir::Expr& e, const std::vector<ir::Var>& axes, int axis,
                       int64_t divisor) {
    struct Finder : ir::IRVisitor {
        using ir::IRVisitor::visit;
        const std::vector<ir::Var>* axes = nullptr;
        int axis = -1;
        int64_t divisor = 0;
        bool found = false;
        void visit(const ir::Div* op) override {
            int64_t d = 0;
            found = found ||
                    (axis_by_constant<ir::Div>(ir::Expr(op), *axes, &d) == axis && d == divisor);
            ir::IRVisitor::visit(op);
        }
    } finder;
    finder.axes = &axes;
    finder.axis = axis;
    finder.divisor = divisor;
    finder.visit(e);
    return finder.found;
}

/// The id of the iterator of stage `sid` named `name`, or -1.
int iter_named(const State& s, int sid, const std::string& name) {
    const auto& iters = s.stages[static_cast<size_t>(sid)].iters;
    for (size_t k = 0; k < iters.size(); ++k)
        if (iters[k].name == name)
            return static_cast<int>(k);
    return -1;
}

/// Stage `sid`'s loops reordered to `order` (iterator ids), with its reduce loops inserted
/// before the last entry (the vectors), in their own order.
void reorder_with_reduce_before_last(State& s, int sid, std::vector<int> order) {
    const int vec = order.back();
    order.pop_back();
    const auto& iters = s.stages[static_cast<size_t>(sid)].iters;
    for (size_t k = 0; k < iters.size(); ++k)
        if (iters[k].kind == IterKind::Reduce)
            order.push_back(static_cast<int>(k));
    order.push_back(vec);
    reorder(s, sid, order);
}

/// The axis of stage `sid` (not its last) that its read of the largest tensor does not use:
/// the values along it come from the same loaded data (a transformed row from the same image
/// rows, an output column from the same products), so a register tile over it loads them
/// once. -1 when there is none.
int reuse_axis(const State& s, int sid) {
    const Stage& st = s.stages[static_cast<size_t>(sid)];
    std::vector<const ir::Variable*> reduce_vars;
    for (const ir::IterVar& r : st.reduce_axes())
        reduce_vars.push_back(r.var.get());
    int64_t largest = 0; // elements of the largest tensor read
    std::vector<bool> uses;
    for (const AxisRead& r : reads_by_axis(st.body, st.axes, reduce_vars)) {
        int64_t n = 1;
        for (int64_t e : r.tensor->shape)
            n *= e;
        if (n > largest) {
            largest = n;
            uses = r.uses;
        }
    }
    for (size_t k = 0; k + 1 < st.axes.size() && k < uses.size(); ++k)
        if (!uses[k] && st.iters[k].extent > 1)
            return static_cast<int>(k);
    return -1;
}

/// Stage `sid`, computed inside the transform's loops: its spatial loops, its last axis's
/// vector blocks, its reduce loops (unrolled), the reuse axis (unrolled: the register tile),
/// then the vector part of its last axis.
void order_slice_loops(State& s, int sid, int64_t lanes) {
    const Stage& st = s.stages[static_cast<size_t>(sid)];
    const std::string cn = st.iters[st.axes.size() - 1].name;
    const int reuse = reuse_axis(s, sid);
    const std::string rn = reuse >= 0 ? st.iters[static_cast<size_t>(reuse)].name : "";
    const int reduce = static_cast<int>(st.reduce_axes().size());
    // st is not used past this point: the steps below may reallocate the stages.
    split(s, sid, iter_named(s, sid, cn), {lanes});
    const int vec = iter_named(s, sid, cn + ".1");
    const int tile = reuse >= 0 ? iter_named(s, sid, rn) : -1;
    std::vector<int> order;
    const auto& iters = s.stages[static_cast<size_t>(sid)].iters;
    for (IterKind kind : {IterKind::Spatial, IterKind::Reduce})
        for (size_t k = 0; k < iters.size(); ++k)
            if (iters[k].kind == kind && static_cast<int>(k) != vec && static_cast<int>(k) != tile)
                order.push_back(static_cast<int>(k));
    const int reduce_begin = static_cast<int>(order.size()) - reduce;
    if (tile >= 0)
        order.push_back(tile);
    order.push_back(vec);
    reorder(s, sid, order);
    for (int k = reduce_begin; k < static_cast<int>(order.size()) - 1; ++k)
        unroll(s, sid, k);
    vectorize(s, sid, static_cast<int>(order.size()) - 1);
}

/// The largest first-pass slice computed per tile row (input form).
constexpr int64_t kMaxSliceBytes = 128 << 10;

/// The stages of a two-pass transform: the first pass, the second (the reduction reading it)
/// and the stage whose loops run both (the second pass, or an elementwise stage after it).
struct TwoPass {
    int first = -1, second = -1, out = -1;
};

/// `s` (its strictly inlinable stages inlined) as a two-pass transform, or nullopt.
std::optional<TwoPass> find_two_pass(const State& s) {
    std::vector<int> live;
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
        if (!s.is_input(sid) &&
            s.stages[static_cast<size_t>(sid)].location.kind != ComputeLocKind::Inlined)
            live.push_back(sid);
    if (live.size() != 2 && live.size() != 3)
        return std::nullopt;
    TwoPass t{live[0], live[1], live.back()};
    const Stage& first = s.stages[static_cast<size_t>(t.first)];
    const Stage& second = s.stages[static_cast<size_t>(t.second)];
    if (!s.is_output(t.out) || s.consumers_through_inlined(t.first) != std::vector<int>{t.second} ||
        first.reduce_axes().empty() || second.reduce_axes().empty() ||
        s.is_read_as_words(t.first) || second.axes.size() < 3)
        return std::nullopt;
    // The stage after it takes its values one to one (through inlined stages: an epilogue).
    if (t.out != t.second && fusible_consumer(s, t.second) != t.out)
        return std::nullopt;
    return t;
}

/// Input form: schedules `s` and returns true, or returns false (s untouched) when the
/// second pass does not read the first as P[u / U, v / V, ..., c].
bool schedule_input_form(State& s, const TwoPass& t, const ir::TensorRead& read, int64_t lanes) {
    const Stage& first = s.stages[static_cast<size_t>(t.first)];
    const Stage& second = s.stages[static_cast<size_t>(t.second)];
    const std::vector<ir::Expr>& idx = read.indices;
    int64_t U = 0, V = 0;
    const int u = axis_by_constant<ir::Div>(idx[0], second.axes, &U);
    const int v = axis_by_constant<ir::Div>(idx[1], second.axes, &V);
    if (second.axes.size() != 3 || idx.size() < 3 || u < 0 || v < 0 || u == v || u == 2 || v == 2 ||
        idx.back().as<ir::Variable>() != second.axes[2].get() ||
        second.iters[static_cast<size_t>(u)].extent % U != 0 ||
        second.iters[static_cast<size_t>(v)].extent % V != 0 ||
        second.iters[2].extent % lanes != 0 ||
        first.iters[first.axes.size() - 1].extent != second.iters[2].extent)
        return false;
    int64_t slice = first.tensor.dtype().bytes();
    for (size_t k = 1; k < first.tensor.shape().size(); ++k)
        slice *= first.tensor.shape()[k];
    const Stage& out = s.stages[static_cast<size_t>(t.out)];
    const std::string un = out.iters[static_cast<size_t>(u)].name;
    const std::string vn = out.iters[static_cast<size_t>(v)].name;
    const std::string cn = out.iters[2].name;
    split(s, t.out, u, {U});
    split(s, t.out, iter_named(s, t.out, vn), {V});
    split(s, t.out, iter_named(s, t.out, cn), {lanes});
    reorder_with_reduce_before_last(
        s, t.out,
        {iter_named(s, t.out, un + ".0"), iter_named(s, t.out, vn + ".0"),
         iter_named(s, t.out, un + ".1"), iter_named(s, t.out, cn + ".0"),
         iter_named(s, t.out, vn + ".1"), iter_named(s, t.out, cn + ".1")});
    const int n = static_cast<int>(s.stages[static_cast<size_t>(t.out)].iters.size());
    parallel(s, t.out, 0);
    if (V <= 8)
        unroll(s, t.out, 4);
    for (int k = 5; k < n - 1; ++k)
        unroll(s, t.out, k);
    vectorize(s, t.out, n - 1);
    if (t.out != t.second) {
        compute_at(s, t.second, t.out, 4); // one vector at a time, inside v % V
        order_slice_loops(s, t.second, lanes);
    }
    // One tile row's first pass when it fits a quarter of the smallest L2 met (Rocket Lake's
    // 512 KB; resnet18's are 82-110 KB): its rows computed once for every a, each loaded
    // image vector feeding alpha of them; else one row a at a time.
    compute_at(s, t.first, t.out, slice <= kMaxSliceBytes ? 0 : 1);
    order_slice_loops(s, t.first, lanes);
    return true;
}

/// Output form: schedules `s` and returns true, or returns false (s untouched) when the
/// second pass (axes [..., y, x, c]) does not read the first at x % m in its third index and
/// at a function of y / m in another.
bool schedule_output_form(State& s, const TwoPass& t, const ir::TensorRead& read, int64_t lanes) {
    const Stage& second = s.stages[static_cast<size_t>(t.second)];
    const std::vector<ir::Expr>& idx = read.indices;
    const int d = static_cast<int>(second.axes.size());
    const int y = d - 3, x = d - 2;
    int64_t m = 0;
    if (idx.size() < 3 || axis_by_constant<ir::Mod>(idx[2], second.axes, &m) != x ||
        second.iters[static_cast<size_t>(d - 1)].extent % lanes != 0)
        return false;
    bool tile_row = false;
    for (size_t k = 0; k < idx.size(); ++k)
        tile_row = tile_row || (k != 2 && contains_quotient(idx[k], second.axes, y, m));
    if (!tile_row)
        return false;
    const Stage& out = s.stages[static_cast<size_t>(t.out)];
    const std::string yn = out.iters[static_cast<size_t>(y)].name;
    const std::string xn = out.iters[static_cast<size_t>(x)].name;
    const std::string cn = out.iters[static_cast<size_t>(d - 1)].name;
    split(s, t.out, y, {m});
    split(s, t.out, iter_named(s, t.out, xn), {m});
    split(s, t.out, iter_named(s, t.out, cn), {lanes});
    // The rows of tiles outside the axis before them (NCHW[x]c's channel blocks): the threads
    // split the image by rows, as the next conv's input transform does, so each mostly reads
    // what it wrote (by channel blocks, conv_bn_relu's 32x32 input transforms at 2 threads ran
    // 3-4x their hot time in the model).
    std::vector<int> order;
    for (int k = 0; k + 1 < y; ++k)
        order.push_back(k);
    order.push_back(iter_named(s, t.out, yn + ".0"));
    if (y > 0)
        order.push_back(y - 1);
    for (const std::string& name : {yn + ".1", xn + ".0", xn + ".1", cn + ".0", cn + ".1"})
        order.push_back(iter_named(s, t.out, name));
    reorder_with_reduce_before_last(s, t.out, order);
    std::vector<int> outer;
    for (int k = 0; k <= y; ++k)
        outer.push_back(k);
    const int rows = outer.size() > 1 ? fuse(s, t.out, outer) : 0;
    const int n = static_cast<int>(s.stages[static_cast<size_t>(t.out)].iters.size());
    parallel(s, t.out, rows);
    if (m <= 8)
        unroll(s, t.out, rows + 3);
    for (int k = rows + 5; k < n - 1; ++k)
        unroll(s, t.out, k);
    vectorize(s, t.out, n - 1);
    if (t.out != t.second) {
        compute_at(s, t.second, t.out, rows + 4); // one vector at a time, inside c / lanes
        order_slice_loops(s, t.second, lanes);
    }
    compute_at(s, t.first, t.out, rows);
    order_slice_loops(s, t.first, lanes);
    return true;
}

} // namespace

std::optional<State> separable_transform_schedule(const te::Compute& c,
                                                  const DefaultScheduleOptions& opts) {
    const int64_t lanes = opts.vector_lanes;
    if (lanes < 2 || c.outputs.size() != 1)
        return std::nullopt;
    try {
        State s = make_initial_state(c);
        inline_strict_stages(s);
        const std::optional<TwoPass> t = find_two_pass(s);
        if (!t)
            return std::nullopt;
        const Stage& first = s.stages[static_cast<size_t>(t->first)];
        std::vector<const ir::TensorRead*> reads;
        for_each_read(inline_lets(s.stages[static_cast<size_t>(t->second)].body),
                      [&](const ir::TensorRead* r) {
                          if (r->tensor.same_as(first.tensor))
                              reads.push_back(r);
                      });
        if (reads.size() != 1 || reads[0]->indices.size() != first.axes.size())
            return std::nullopt;
        if (schedule_input_form(s, *t, *reads[0], lanes) ||
            schedule_output_form(s, *t, *reads[0], lanes))
            return s;
        return std::nullopt;
    } catch (const ScheduleError&) {
        return std::nullopt;
    }
}

} // namespace tessera::sched::detail
