// extract_features: one row per Store of a lowered program, Ansor's per-store features
// (feature_list.def says what each slot means).
//
// One walk over the program keeps the loops around the current point (extent, kind), the Let
// bindings, the Allocates and the guards; at each Store the row is computed from the loop
// nest and the linear forms of the store's and its loads' indices.
#include "tessera/cost_model/features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "tessera/ir/functor.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/tile_matmul.h"
#include "tessera/ir/warp_mma.h"

#include "feature_layout.h"
#include "index_linear_form.h"

namespace tessera::cost {

namespace {

using layout::buffer_slot;
using layout::Feature;
using layout::slot;

/// Bytes of a cache line: the granularity of the line features.
constexpr double kCacheLineBytes = 64.0;
/// Samples of the arithmetic intensity curve (ai_curve_0..9).
constexpr int kCurveSamples = 10;

constexpr int entry(Feature f) { return static_cast<int>(f); }
static_assert(entry(Feature::ai_curve_9) - entry(Feature::ai_curve_0) + 1 == kCurveSamples,
              "feature_list.def: the intensity curve has kCurveSamples entries");
static_assert(entry(Feature::float_mad) == 0 && entry(Feature::cast_op) == 15,
              "feature_list.def: the arithmetic counts come first, float_mad to cast_op");
// annotation_features writes the position one-hots relative to `none`.
constexpr bool one_hots_follow(Feature none, Feature mixed) {
    return entry(mixed) - entry(none) == 7;
}
static_assert(one_hots_follow(Feature::vec_pos_none, Feature::vec_pos_mixed) &&
                  one_hots_follow(Feature::unroll_pos_none, Feature::unroll_pos_mixed) &&
                  one_hots_follow(Feature::parallel_pos_none, Feature::parallel_pos_mixed),
              "feature_list.def: none, the six positions, then mixed");

/// For each row index, whether it is stored raw rather than log2(1 + x).
const std::vector<bool>& raw_slots() {
    static const std::vector<bool> raw = [] {
        std::vector<bool> out;
        for (const FeatureInfo& f : feature_info())
            out.push_back(!f.log_scaled);
        return out;
    }();
    return raw;
}

// ---- arithmetic counts -----------------------------------------------------------------------

/// Operations per execution of a store's value and index, by feature (lanes counted).
class OpCounter : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;
    std::array<double, layout::kNumEntries> count{};

    /// Float operations per execution (a mad is two).
    double float_ops() const {
        return 2 * at(Feature::float_mad) + at(Feature::float_addsub) + at(Feature::float_mul) +
               at(Feature::float_divmod) + at(Feature::float_cmp) + at(Feature::float_math_func) +
               at(Feature::float_other_func);
    }

    void visit(const ir::Add* op) override { add_or_sub(op, op->a, op->b); }
    void visit(const ir::Sub* op) override { add_or_sub(op, op->a, op->b); }
    void visit(const ir::Mul* op) override {
        bump(op->type, Feature::float_mul, Feature::int_mul);
        visit_children(op);
    }
    void visit(const ir::Div* op) override { divmod(op); }
    void visit(const ir::Mod* op) override { divmod(op); }
    void visit(const ir::Min* op) override { cmp(op, op->a.type()); }
    void visit(const ir::Max* op) override { cmp(op, op->a.type()); }
    void visit(const ir::EQ* op) override { cmp(op, op->a.type()); }
    void visit(const ir::NE* op) override { cmp(op, op->a.type()); }
    void visit(const ir::LT* op) override { cmp(op, op->a.type()); }
    void visit(const ir::LE* op) override { cmp(op, op->a.type()); }
    void visit(const ir::GT* op) override { cmp(op, op->a.type()); }
    void visit(const ir::GE* op) override { cmp(op, op->a.type()); }
    void visit(const ir::And* op) override { logic(op); }
    void visit(const ir::Or* op) override { logic(op); }
    void visit(const ir::Not* op) override { logic(op); }
    void visit(const ir::Select* op) override {
        add(Feature::select_op, op->type.lanes);
        visit_children(op);
    }
    void visit(const ir::Cast* op) override {
        add(Feature::cast_op, op->type.lanes);
        visit_children(op);
    }
    void visit(const ir::VectorReduce* op) override {
        // Folding value.lanes into lanes takes value.lanes - lanes operations.
        const double ops = op->value.type().lanes - op->lanes;
        const bool sum = op->op == ir::ReduceOp::Sum;
        if (op->type.is_float())
            add(sum ? Feature::float_addsub : Feature::float_cmp, ops);
        else
            add(sum ? Feature::int_addsub : Feature::int_cmp, ops);
        visit_children(op);
    }
    void visit(const ir::Call* op) override {
        const double lanes = op->type.lanes;
        switch (op->op) {
        case ir::CallOp::Exp:
        case ir::CallOp::Log:
        case ir::CallOp::Sqrt:
        case ir::CallOp::Tanh:
        case ir::CallOp::Erf:
        case ir::CallOp::Pow:
            add(Feature::float_math_func, lanes);
            break;
        case ir::CallOp::Abs:
        case ir::CallOp::Floor:
        case ir::CallOp::Ceil:
        case ir::CallOp::RoundEven:
        case ir::CallOp::Ldexp:
            add(op->type.is_float() ? Feature::float_other_func : Feature::int_other_func, lanes);
            break;
        case ir::CallOp::Dot4U8S8: // four byte products summed: four integer multiply-adds
            add(Feature::int_mad, 4 * lanes);
            break;
        case ir::CallOp::Dot2BF16: // two bf16 products summed: two float multiply-adds
            add(Feature::float_mad, 2 * lanes);
            break;
        case ir::CallOp::TileMatmulU8S8: // its byte products, as dot4 counts them
            add(Feature::int_mad, double(ir::TileMatmul::from_call(*op).products()));
            break;
        case ir::CallOp::TileMatmulBF16: // its bf16 products, as dot2 counts them
            add(Feature::float_mad, double(ir::TileMatmul::from_call(*op).products()));
            break;
        case ir::CallOp::WarpMma: { // this lane's share of the warp's 16 x 8 x k products
            const ir::MmaKind kind = ir::WarpMma::from_call(*op).kind;
            add(Feature::float_mad, double(ir::WarpMma::kRows * ir::WarpMma::kColumns *
                                           ir::WarpMma::k_of(kind) / ir::WarpMma::kLanes));
            break;
        }
        case ir::CallOp::Prefetch:
        case ir::CallOp::BytesAsWord: // its Load is counted as a load
            break;
        case ir::CallOp::GpuBlockSum: // a shuffle tree: a few float ops per thread
        case ir::CallOp::GpuBlockMax:
        case ir::CallOp::GpuBlockMin:
            add(Feature::float_other_func, lanes);
            break;
        }
        visit_children(op);
    }

  private:
    static bool is_dot4(const ir::Expr& e) { // or dot2_bf16: both accumulate in one instruction
        const ir::Call* c = e.as<ir::Call>();
        return c && (c->op == ir::CallOp::Dot4U8S8 || c->op == ir::CallOp::Dot2BF16);
    }
    double at(Feature f) const { return count[static_cast<size_t>(f)]; }
    void add(Feature f, double n) { count[static_cast<size_t>(f)] += n; }
    void bump(ir::DataType t, Feature if_float, Feature if_int) {
        if (t.is_float())
            add(if_float, t.lanes);
        else if (!t.is_bool())
            add(if_int, t.lanes);
    }
    template <typename T> void add_or_sub(const T* op, const ir::Expr& a, const ir::Expr& b) {
        // acc + dot4_u8s8(x, y) accumulates into the call's multiply-adds (one vpdpbusd; the
        // same for dot2_bf16 and vdpbf16ps): the add costs nothing of its own.
        if constexpr (std::is_same_v<T, ir::Add>) {
            if (is_dot4(a) || is_dot4(b)) {
                visit_children(op);
                return;
            }
        }
        // x + y * z (either side) is one multiply-add: the backend fuses it.
        const ir::Mul* mul = a.as<ir::Mul>() ? a.as<ir::Mul>() : b.as<ir::Mul>();
        if (!mul) {
            bump(op->type, Feature::float_addsub, Feature::int_addsub);
            visit_children(op);
            return;
        }
        bump(op->type, Feature::float_mad, Feature::int_mad);
        visit(mul->a);
        visit(mul->b);
        visit(a.as<ir::Mul>() == mul ? b : a);
    }
    template <typename T> void divmod(const T* op) {
        bump(op->type, Feature::float_divmod, Feature::int_divmod);
        visit_children(op);
    }
    template <typename T> void cmp(const T* op, ir::DataType operand) {
        if (operand.is_float())
            add(Feature::float_cmp, op->type.lanes);
        else if (operand.is_bool())
            add(Feature::bool_op, op->type.lanes);
        else
            add(Feature::int_cmp, op->type.lanes);
        visit_children(op);
    }
    template <typename T> void logic(const T* op) {
        add(Feature::bool_op, op->type.lanes);
        visit_children(op);
    }
};

// ---- the walk ----------------------------------------------------------------------------------

/// A loop around the current point.
struct LoopInfo {
    double extent; ///< Trip count (an upper bound when the extent is not constant).
    ir::ForKind kind;
};

/// How a store reuses a buffer's elements (Ansor's reuse types).
enum class ReuseKind : uint8_t {
    Loop,   ///< A loop around the store does not move any index of the buffer.
    Serial, ///< No such loop, but the store accesses the buffer more than once.
    None,
};

/// One access of a buffer by a store: its index form and whether it writes.
struct Access {
    const ir::BufferNode* buffer;
    LinearForm form;
    bool write;
};

/// What a store does to one buffer.
struct BufferUse {
    const ir::BufferNode* buffer = nullptr;
    double elem_bytes = 0, num_elements = 0;
    int reads = 0, writes = 0;
    std::vector<LinearForm> forms; ///< Distinct index forms.
    std::vector<int> multiplicity; ///< Accesses per distinct form.
    std::vector<double> footprint; ///< Distinct elements touched by loops l.. (size n + 1).
    double bytes = 0, lines = 0, unique_lines = 0, stride = 0;
    ReuseKind reuse = ReuseKind::None;
    int reuse_level = -1; ///< The reuse loop's level (ReuseKind::Loop).
    double reuse_ct = 0, reuse_dis_iter = 0, reuse_dis_bytes = 0;
};

/// Collects the loads of an expression (in evaluation order), with their index forms.
class LoadCollector : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;
    LoadCollector(LinearFormBuilder& forms, const std::vector<int64_t>& mins,
                  const std::vector<int64_t>& extents, std::vector<Access>& out)
        : forms_(forms), mins_(mins), extents_(extents), out_(out) {}
    void visit(const ir::Load* op) override {
        LinearForm form = forms_.form_of(op->index);
        forms_.measure(form, op->index, mins_, extents_);
        out_.push_back({op->buffer.get(), std::move(form), false});
        visit_children(op);
    }
    void visit(const ir::Let* op) override {
        visit(op->value);
        forms_.bind(op->var.get(), op->value);
        visit(op->body);
        forms_.unbind();
    }

  private:
    LinearFormBuilder& forms_;
    const std::vector<int64_t>& mins_;
    const std::vector<int64_t>& extents_;
    std::vector<Access>& out_;
};

bool is_zero(double c) { return std::fabs(c) < 1e-12; }

/// Distinct elements a form touches over the loops of levels from..n-1 (and its lanes):
/// the smaller of the product of the extents it moves with and its index span.
double footprint_of(const LinearForm& f, const std::vector<LoopInfo>& loops, size_t from) {
    double prod = 1, span = 1;
    for (size_t l = from; l < loops.size(); ++l) {
        const double c = f.coef_at(l);
        if (is_zero(c))
            continue;
        prod *= loops[l].extent;
        span += std::fabs(c) * (loops[l].extent - 1);
    }
    if (f.lanes > 1 && !is_zero(f.lane_stride)) {
        prod *= f.lanes;
        span += std::fabs(f.lane_stride) * (f.lanes - 1);
    }
    return std::max(1.0, std::min(prod, std::ceil(span)));
}

class Extractor : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;
    std::vector<std::vector<float>> rows;

    void visit(const ir::For* op) override {
        const double extent = extent_of(op);
        forms_.push_loop(op->loop_var.get());
        loops_.push_back({extent, op->kind});
        mins_.push_back(min_of(op));
        extents_.push_back(static_cast<int64_t>(extent));
        const bool bounded = add_bounds(op);
        visit(op->body);
        if (bounded)
            bounds_.erase(op->loop_var.get());
        extents_.pop_back();
        mins_.pop_back();
        loops_.pop_back();
        forms_.pop_loop();
    }
    void visit(const ir::LetStmt* op) override {
        forms_.bind(op->var.get(), op->value);
        visit(op->body);
        forms_.unbind();
    }
    void visit(const ir::Allocate* op) override {
        allocs_.push_back({op->buffer.get(), loops_.size()});
        visit(op->body);
        allocs_.pop_back();
    }
    void visit(const ir::IfThenElse* op) override {
        // Each branch runs in its share of the iterations: a parallel loop's main and remainder
        // tiles, or the guard of an imperfect tile, must not count the work twice.
        const double taken = forms_.fraction_true(op->condition, guards_, mins_, extents_);
        const double outer = weight_;
        guards_.push_back({op->condition, true});
        weight_ = outer * taken;
        visit(op->then_case);
        guards_.back().holds = false;
        weight_ = outer * (1 - taken);
        visit(op->else_case);
        weight_ = outer;
        guards_.pop_back();
    }
    void visit(const ir::Store* op) override { rows.push_back(row_of(op)); }

  private:
    LinearFormBuilder forms_;
    std::vector<LoopInfo> loops_;
    std::vector<int64_t> mins_, extents_; ///< Per level: lower bound of the min, trip count.
    std::vector<std::pair<const ir::BufferNode*, size_t>> allocs_; ///< Buffer, loop depth.
    std::vector<LinearFormBuilder::Guard> guards_; ///< The IfThenElse around, outermost first.
    /// Estimated share of the iterations of the loops around the current point in which the
    /// enclosing guards hold (1 outside any IfThenElse).
    double weight_ = 1;
    ir::BoundsMap bounds_;

    /// The loop's trip count: its constant extent, else the upper bound of the extent given
    /// the enclosing loops (at least 0).
    double extent_of(const ir::For* op) const {
        if (const ir::IntImm* imm = op->extent.as<ir::IntImm>())
            return std::max<double>(0, static_cast<double>(imm->value));
        const ir::Interval iv = ir::bounds_of(op->extent, bounds_);
        return iv.has_max ? std::max<double>(0, static_cast<double>(iv.max)) : 1.0;
    }
    /// The lower bound of the loop's first value (0 when unknown).
    int64_t min_of(const ir::For* op) const {
        if (const ir::IntImm* imm = op->min.as<ir::IntImm>())
            return imm->value;
        const ir::Interval lo = ir::bounds_of(op->min, bounds_);
        return lo.has_min ? lo.min : 0;
    }
    /// Records the loop variable's range (for the extents of inner loops); false if unknown.
    bool add_bounds(const ir::For* op) {
        const ir::IntImm* min_imm = op->min.as<ir::IntImm>();
        const ir::IntImm* ext_imm = op->extent.as<ir::IntImm>();
        if (min_imm && ext_imm) { // the common case, without the bounds analysis
            if (ext_imm->value < 1)
                return false;
            bounds_[op->loop_var.get()] =
                ir::Interval::range(min_imm->value, min_imm->value + ext_imm->value - 1);
            return true;
        }
        const ir::Interval lo = ir::bounds_of(op->min, bounds_);
        const ir::Interval ext = ir::bounds_of(op->extent, bounds_);
        if (!lo.bounded() || !ext.has_max || ext.max < 1)
            return false;
        bounds_[op->loop_var.get()] = ir::Interval::range(lo.min, lo.max + ext.max - 1);
        return true;
    }

    std::vector<float> row_of(const ir::Store* op);
    std::vector<BufferUse> buffer_uses(const std::vector<Access>& accesses, double outer_prod);
    void annotation_features(const ir::Store* op, const LinearForm& store_form,
                             std::vector<double>& row) const;
    void intensity_curve(const std::vector<BufferUse>& uses, double float_ops,
                         std::vector<double>& row) const;
};

std::vector<float> Extractor::row_of(const ir::Store* op) {
    std::vector<double> row(layout::kRowLength, 0.0);
    const size_t n = loops_.size();
    double outer_prod = 1;
    for (const LoopInfo& l : loops_)
        outer_prod *= l.extent;

    // Arithmetic, per execution, times the executions.
    OpCounter ops;
    ops.visit(op->value);
    ops.visit(op->index);
    for (int e = 0; e <= entry(Feature::cast_op); ++e)
        row[slot(static_cast<Feature>(e))] = ops.count[e] * outer_prod * weight_;

    // Accesses: the store itself first, then its loads in evaluation order.
    std::vector<Access> accesses;
    LinearForm store_form = forms_.form_of(op->index);
    forms_.measure(store_form, op->index, mins_, extents_);
    accesses.push_back({op->buffer.get(), std::move(store_form), true});
    LoadCollector loads(forms_, mins_, extents_, accesses);
    loads.visit(op->value);
    loads.visit(op->index);

    annotation_features(op, accesses.front().form, row);
    std::vector<BufferUse> uses = buffer_uses(accesses, outer_prod);
    intensity_curve(uses, ops.float_ops(), row);

    // The five buffers with the most traffic.
    std::stable_sort(uses.begin(), uses.end(), [](const BufferUse& a, const BufferUse& b) {
        if (a.lines != b.lines)
            return a.lines > b.lines;
        return a.bytes > b.bytes;
    });
    for (size_t b = 0; b < uses.size() && b < static_cast<size_t>(layout::kNumBuffers); ++b) {
        const BufferUse& u = uses[b];
        auto set = [&](Feature f, double v) { row[buffer_slot(static_cast<int>(b), f)] = v; };
        set(Feature::acc_read, u.writes == 0 ? 1 : 0);
        set(Feature::acc_write, u.reads == 0 ? 1 : 0);
        set(Feature::acc_rw, u.reads > 0 && u.writes > 0 ? 1 : 0);
        const double unique_bytes = u.footprint[0] * u.elem_bytes;
        set(Feature::bytes, u.bytes);
        set(Feature::unique_bytes, unique_bytes);
        set(Feature::lines, u.lines);
        set(Feature::unique_lines, u.unique_lines);
        set(Feature::reuse_loop, u.reuse == ReuseKind::Loop ? 1 : 0);
        set(Feature::reuse_serial, u.reuse == ReuseKind::Serial ? 1 : 0);
        set(Feature::reuse_none, u.reuse == ReuseKind::None ? 1 : 0);
        set(Feature::reuse_dis_iter, u.reuse_dis_iter);
        set(Feature::reuse_dis_bytes, u.reuse_dis_bytes);
        set(Feature::reuse_ct, u.reuse_ct);
        set(Feature::bytes_d_reuse_ct, u.bytes / (1 + u.reuse_ct));
        set(Feature::unique_bytes_d_reuse_ct, unique_bytes / (1 + u.reuse_ct));
        set(Feature::lines_d_reuse_ct, u.lines / (1 + u.reuse_ct));
        set(Feature::unique_lines_d_reuse_ct, u.unique_lines / (1 + u.reuse_ct));
        set(Feature::stride, u.stride);
    }

    // The allocation of the stored buffer, if the program allocates it.
    for (size_t i = allocs_.size(); i-- > 0;) {
        if (allocs_[i].first != op->buffer.get())
            continue;
        double outside = 1, inside = 1;
        for (size_t l = 0; l < n; ++l)
            (l < allocs_[i].second ? outside : inside) *= loops_[l].extent;
        const double elems = static_cast<double>(op->buffer->num_elements());
        row[slot(Feature::alloc_size)] = elems * op->buffer->dtype.bytes();
        row[slot(Feature::alloc_prod)] = elems * outside;
        row[slot(Feature::alloc_outer_prod)] = outside;
        row[slot(Feature::alloc_inner_prod)] = inside;
        break;
    }

    row[slot(Feature::outer_prod)] = outer_prod;
    row[slot(Feature::num_loops)] = static_cast<double>(n);
    row[slot(Feature::num_guards)] = static_cast<double>(guards_.size());

    const std::vector<bool>& raw = raw_slots();
    std::vector<float> out(layout::kRowLength);
    for (int i = 0; i < layout::kRowLength; ++i)
        out[i] = static_cast<float>(raw[i] ? row[i] : std::log2(1.0 + std::max(0.0, row[i])));
    return out;
}

std::vector<BufferUse> Extractor::buffer_uses(const std::vector<Access>& accesses,
                                              double outer_prod) {
    const size_t n = loops_.size();
    std::vector<BufferUse> uses;
    for (const Access& a : accesses) {
        auto it = std::find_if(uses.begin(), uses.end(),
                               [&](const BufferUse& u) { return u.buffer == a.buffer; });
        if (it == uses.end()) {
            BufferUse u;
            u.buffer = a.buffer;
            u.elem_bytes = a.buffer->dtype.bytes();
            u.num_elements = static_cast<double>(a.buffer->num_elements());
            uses.push_back(std::move(u));
            it = uses.end() - 1;
        }
        (a.write ? it->writes : it->reads) += 1;
        auto f = std::find(it->forms.begin(), it->forms.end(), a.form);
        if (f == it->forms.end()) {
            it->forms.push_back(a.form);
            it->multiplicity.push_back(1);
        } else {
            it->multiplicity[f - it->forms.begin()] += 1;
        }
    }

    for (BufferUse& u : uses) {
        // Footprints at every level (distinct forms added, capped by the buffer's size).
        u.footprint.assign(n + 1, 0.0);
        for (size_t l = 0; l <= n; ++l) {
            for (const LinearForm& f : u.forms)
                u.footprint[l] += footprint_of(f, loops_, l);
            u.footprint[l] = std::min(u.footprint[l], u.num_elements);
        }
        // Traffic: every access of every iteration; lines shared by consecutive iterations of
        // the innermost loop (or the lanes of a vector index).
        double smallest_stride = 0, run_of_smallest = 1;
        for (size_t k = 0; k < u.forms.size(); ++k) {
            const LinearForm& f = u.forms[k];
            const double count = u.multiplicity[k];
            u.bytes += count * outer_prod * weight_ * f.lanes * u.elem_bytes;
            double run = 1, step = 0, outer_iters = outer_prod;
            if (f.lanes > 1) {
                run = f.lanes, step = std::fabs(f.lane_stride);
            } else if (n > 0) {
                run = loops_[n - 1].extent, step = std::fabs(f.step_at(n - 1));
                outer_iters = run > 0 ? outer_prod / run : 0;
            }
            const double run_lines = is_zero(step)
                                         ? 1.0
                                         : std::min(run, std::ceil(((run - 1) * step + 1) *
                                                                   u.elem_bytes / kCacheLineBytes));
            u.lines += count * outer_iters * weight_ * std::max(1.0, run_lines);
            // The contiguous direction for the distinct lines.
            auto consider = [&](double c, double extent) {
                c = std::fabs(c);
                if (is_zero(c) || extent <= 1)
                    return;
                if (smallest_stride == 0 || c < smallest_stride)
                    smallest_stride = c, run_of_smallest = extent;
            };
            for (size_t l = 0; l < n; ++l)
                consider(f.step_at(l), loops_[l].extent);
            if (f.lanes > 1)
                consider(f.lane_stride, f.lanes);
            // Stride: of the innermost loop (or the lanes) that moves the first form.
            if (k == 0) {
                if (f.lanes > 1 && !is_zero(f.lane_stride)) {
                    u.stride = std::fabs(f.lane_stride);
                } else {
                    for (size_t l = n; l-- > 0;)
                        if (!is_zero(f.step_at(l))) {
                            u.stride = std::fabs(f.step_at(l));
                            break;
                        }
                }
            }
        }
        double per_line = 1;
        if (smallest_stride > 0 && smallest_stride * u.elem_bytes < kCacheLineBytes)
            per_line = std::max(
                1.0, std::min(run_of_smallest,
                              std::floor(kCacheLineBytes / (smallest_stride * u.elem_bytes))));
        u.unique_lines = std::ceil(u.footprint[0] / per_line);

        // Reuse: the innermost loop that does not move any index of the buffer.
        for (size_t l = n; l-- > 0;) {
            if (loops_[l].extent <= 1)
                continue;
            const bool moves =
                std::any_of(u.forms.begin(), u.forms.end(), [&](const LinearForm& f) {
                    return !is_zero(f.coef_at(l)) || !is_zero(f.step_at(l));
                });
            if (!moves) {
                u.reuse = ReuseKind::Loop;
                u.reuse_level = static_cast<int>(l);
                u.reuse_ct = loops_[l].extent;
                u.reuse_dis_iter = 1;
                for (size_t i = l + 1; i < n; ++i)
                    u.reuse_dis_iter *= loops_[i].extent;
                break;
            }
        }
        const int total = u.reads + u.writes;
        if (u.reuse != ReuseKind::Loop && total > 1) {
            u.reuse = ReuseKind::Serial;
            u.reuse_ct = total - 1;
            u.reuse_dis_iter = 1;
        }
    }
    // Bytes touched between reuses: the footprint of every buffer inside the reuse loop.
    for (BufferUse& u : uses) {
        if (u.reuse == ReuseKind::None)
            continue;
        const size_t inner =
            u.reuse == ReuseKind::Loop ? static_cast<size_t>(u.reuse_level) + 1 : n;
        for (const BufferUse& v : uses)
            u.reuse_dis_bytes += v.footprint[inner] * v.elem_bytes;
    }
    return uses;
}

void Extractor::annotation_features(const ir::Store* op, const LinearForm& store_form,
                                    std::vector<double>& row) const {
    const size_t n = loops_.size();
    // Spatial loops move the stored element, or enclose the Allocate of the stored buffer (a
    // per-tile buffer indexed relative to its tile: each iteration writes its own elements);
    // the others are reduce loops for this store.
    size_t private_depth = 0;
    for (size_t i = allocs_.size(); i-- > 0;)
        if (allocs_[i].first == op->buffer.get()) {
            private_depth = allocs_[i].second;
            break;
        }
    std::vector<bool> spatial(n);
    int innermost[2] = {-1, -1}, outermost[2] = {-1, -1};
    for (size_t l = 0; l < n; ++l) {
        spatial[l] =
            l < private_depth || !is_zero(store_form.coef_at(l)) || !is_zero(store_form.step_at(l));
        const int cls = spatial[l] ? 0 : 1;
        if (outermost[cls] < 0)
            outermost[cls] = static_cast<int>(l);
        innermost[cls] = static_cast<int>(l);
    }
    struct Group {
        ir::ForKind kind;
        Feature num, prod, len, none;
    };
    const Group groups[] = {
        {ir::ForKind::Vectorized, Feature::vec_num, Feature::vec_prod, Feature::vec_len,
         Feature::vec_pos_none},
        {ir::ForKind::Unrolled, Feature::unroll_num, Feature::unroll_prod, Feature::unroll_len,
         Feature::unroll_pos_none},
        {ir::ForKind::Parallel, Feature::parallel_num, Feature::parallel_prod,
         Feature::parallel_len, Feature::parallel_pos_none},
    };
    for (const Group& g : groups) {
        double num = 0, prod = 1, len = 0;
        int position = -1; // 0..5: inner/middle/outer spatial, inner/middle/outer reduce; 6 mixed
        for (size_t l = 0; l < n; ++l) {
            if (loops_[l].kind != g.kind)
                continue;
            num += 1, prod *= loops_[l].extent, len = loops_[l].extent;
            const int cls = spatial[l] ? 0 : 1;
            const int where = static_cast<int>(l) == innermost[cls]   ? 0
                              : static_cast<int>(l) == outermost[cls] ? 2
                                                                      : 1;
            const int pos = cls * 3 + where;
            position = position < 0 || position == pos ? pos : 6;
        }
        row[slot(g.num)] = num;
        row[slot(g.prod)] = num > 0 ? prod : 0;
        row[slot(g.len)] = len;
        // The one-hots follow `none` in the list: none, the six positions, mixed.
        row[slot(g.none) + (position < 0 ? 0 : 1 + position)] = 1;
    }
}

void Extractor::intensity_curve(const std::vector<BufferUse>& uses, double float_ops,
                                std::vector<double>& row) const {
    // Points (log2 footprint bytes, float ops / footprint bytes) from one iteration of the
    // innermost body out to the whole nest.
    const size_t n = loops_.size();
    std::vector<std::pair<double, double>> points;
    double ops = float_ops;
    for (size_t level = n + 1; level-- > 0;) {
        if (level < n)
            ops *= loops_[level].extent;
        double bytes = 0;
        for (const BufferUse& u : uses)
            bytes += u.footprint[level] * u.elem_bytes;
        bytes = std::max(bytes, 1.0);
        points.emplace_back(std::log2(bytes), ops / bytes);
    }
    const double x_max = points.back().first;
    for (int s = 0; s < kCurveSamples; ++s) {
        const double x = x_max * (s + 1) / kCurveSamples;
        double y = points.back().second;
        for (size_t i = 0; i < points.size(); ++i) {
            if (points[i].first < x)
                continue;
            if (i == 0 || points[i].first == points[i - 1].first) {
                y = points[i].second;
            } else {
                const double t =
                    (x - points[i - 1].first) / (points[i].first - points[i - 1].first);
                y = points[i - 1].second + t * (points[i].second - points[i - 1].second);
            }
            break;
        }
        row[slot(Feature::ai_curve_0) + s] = y;
    }
}

} // namespace

ProgramFeatures extract_features(const ir::LoweredFunc& f) {
    Extractor x;
    x.visit(f.body);
    ProgramFeatures out;
    out.rows = std::move(x.rows);
    return out;
}

} // namespace tessera::cost
