// gpu_tensor_core_schedule: the GPU default schedule of a matrix product whose products the
// tensor cores can take (f16 operands summed in f32; f32 operands when TF32 is allowed): one
// `warp_mma` nest per 16 x 8 tile and k step (lower/warp_mma.h), warps tiling the block, the
// operands' block tiles copied to shared memory by all threads (rows padded by one word against
// bank conflicts, the next k tile loaded into registers while this one is summed).
//
// The lanes' outputs follow the mma accumulator layout: lane (g, t) = (lane / 4, lane % 4)
// holds rows g + 8h and columns 2t + c of each 16 x 8 tile (h, c in {0, 1}). Which logical rows
// a tile's rows stand for is free (lowering builds the A fragments from the rows the lane's
// loop nest reads), so the schedule gives each lane contiguous rows and columns: the row axis
// is cut [block, warp, g, mi, h] and the column axis [block, warp, t, nj, c], and a lane's
// register tile (its `local` accumulators, computed at the lane loop) is the box of its
// mi x h rows and nj x c columns, as bounds inference sees it.
#include <algorithm>
#include <optional>

#include "../internal/body_util.h"
#include "default_rules.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/warp_mma.h"
#include "tessera/lower/warp_mma.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/tensor_core_schedule.h"

namespace tessera::sched {

namespace {

/// The default's block tiles, largest first: 128 x 128 blocks of four 64 x 64 warp tiles (128
/// accumulators per lane), down to one warp's single 16 x 8 tile.
const TensorCoreTiles kTiles[] = {
    {2, 2, 4, 8}, {2, 2, 4, 4}, {2, 2, 2, 4}, {2, 2, 2, 2}, {2, 1, 2, 2}, {1, 1, 1, 1},
};

/// The matrix product a tensor-core schedule applies to, in the state `inlined` leaves: one
/// reduction over k (the last two spatial axes rows and columns) of two inputs, and at most one
/// other compute stage, the output: an elementwise epilogue of the product's shape (a bias, an
/// activation, a residual), which becomes the copy-out of the accumulators.
struct Product {
    int stage = -1;
    int epilogue = -1; ///< the output stage when it is not the product
    int64_t batch = 1, m = 0, n = 0, k = 0;
    int a = -1, b = -1; ///< input stage ids of the row operand and the column operand
    /// The row operand's last dimension is read by k and the one before by the rows (A[m][k]):
    /// its shared copy's rows can be reordered (interleave_fragment_rows).
    bool a_rows_then_k = false;
    ir::MmaKind kind = ir::MmaKind::F16;
};

/// Whether every read of `operand` in the product's body indexes its last dimension with k
/// alone and the one before with the rows alone.
bool reads_rows_then_k(const Stage& st, const ir::TensorNode* operand) {
    const size_t n = st.axes.size();
    const ir::Variable* row = st.axes[n - 2].get();
    const ir::Variable* k = st.reduce_axes()[0].var.get();
    bool all = true, any = false;
    for_each_read(inline_lets(st.body), [&](const ir::TensorRead* r) {
        if (r->tensor.get() != operand)
            return;
        any = true;
        const size_t d = r->indices.size();
        all = all && d >= 2 && r->indices[d - 1].as<ir::Variable>() == k &&
              r->indices[d - 2].as<ir::Variable>() == row;
    });
    return any && all;
}

/// make_initial_state(c) with every injective stage but the output inlined (an epilogue's
/// pieces, a cast of an operand); ScheduleError when one cannot be.
State inlined(const te::Compute& c) {
    State s = make_initial_state(c);
    for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid)
        if (!s.stages[sid].is_input() && !s.is_output(sid) && s.is_injective(sid))
            compute_inline(s, sid);
    return s;
}

std::optional<Product> find_product(const State& s, bool allow_tf32) {
    Product p;
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind == ComputeLocKind::Inlined)
            continue;
        if (st.has_reduce()) {
            if (p.stage >= 0)
                return std::nullopt; // one product per schedule
            p.stage = sid;
        } else if (p.epilogue >= 0 || !s.is_output(sid)) {
            return std::nullopt;
        } else {
            p.epilogue = sid;
        }
    }
    if (p.stage < 0 ||
        (p.epilogue >= 0 && (s.is_output(p.stage) || s.stages[p.epilogue].tensor.shape() !=
                                                         s.stages[p.stage].tensor.shape())))
        return std::nullopt;
    const Stage& st = s.stages[p.stage];
    const size_t n = st.axes.size();
    if (!st.has_reduce() || st.reduce_axes().size() != 1 || n < 2 ||
        st.tensor.dtype() != ir::DataType::f32())
        return std::nullopt;
    const std::vector<int> inputs = s.producers(p.stage);
    if (inputs.size() != 2 || !s.stages[inputs[0]].is_input() || !s.stages[inputs[1]].is_input())
        return std::nullopt;
    const ir::DataType t = s.stages[inputs[0]].tensor.dtype();
    if (t != s.stages[inputs[1]].tensor.dtype())
        return std::nullopt;
    if (t == ir::DataType::f16())
        p.kind = ir::MmaKind::F16;
    else if (t == ir::DataType::f32() && allow_tf32)
        p.kind = ir::MmaKind::TF32;
    else
        return std::nullopt;
    for (size_t d = 0; d + 2 < n; ++d)
        p.batch *= st.nodes[d].extent;
    p.m = st.nodes[n - 2].extent;
    p.n = st.nodes[n - 1].extent;
    p.k = st.nodes[n].extent;
    p.a = inputs[0];
    p.b = inputs[1];
    p.a_rows_then_k = reads_rows_then_k(st, s.stages[p.a].tensor.get());
    if (p.m % 16 != 0 || p.n % 8 != 0 || p.k % ir::WarpMma::k_of(p.kind) != 0)
        return std::nullopt; // partial tiles would put the mma under a guard
    return p;
}

/// k steps per shared fetch, most first: the longest k tile that divides k and fits in shared
/// memory (check_gpu rejects the others) wins; 4 steps ran 0.62 ms against 0.69 for 2 on the
/// f16 4096^3 gemm (H200, docs/CUDA.md "Tensor cores").
constexpr int64_t kKSteps[] = {4, 2, 1};

/// The tile configs that divide the product, the first whose grid fills the device first, each
/// with its k steps in kKSteps order.
std::vector<TensorCoreTiles> tile_order(const Product& p) {
    std::vector<TensorCoreTiles> fit;
    for (TensorCoreTiles w : kTiles)
        if (p.m % w.rows() == 0 && p.n % w.columns() == 0)
            fit.push_back(w);
    auto blocks = [&](const TensorCoreTiles& w) {
        return p.batch * (p.m / w.rows()) * (p.n / w.columns());
    };
    auto first = std::find_if(fit.begin(), fit.end(), [&](const TensorCoreTiles& w) {
        return blocks(w) >= detail::kGpuMinBlocks;
    });
    if (first != fit.end())
        std::rotate(fit.begin(), first, fit.end());
    std::vector<TensorCoreTiles> out;
    for (TensorCoreTiles w : fit)
        for (int64_t steps : kKSteps)
            if (p.k % (steps * ir::WarpMma::k_of(p.kind)) == 0) {
                w.k_steps = steps;
                out.push_back(w);
            }
    return out;
}

/// Pads the rows of shared copy sid (its innermost dimension, `row` elements in the block's
/// region) by one 4-byte word: consecutive rows then start in different banks, so the lanes'
/// fragment loads, which read rows a fixed distance apart, spread over the banks (with the row
/// groups of a 32 x ... warp tile, 4 rows apart, f16 A loads are free of conflicts; 8 apart, two
/// lanes share a bank). A layout with a factor longer than the row: (1, row + pad).
void pad_rows(State& s, int sid, int64_t row, int64_t elem_bytes) {
    LayoutTransform t;
    t.factors.assign(s.stages[sid].tensor.shape().size(), 1);
    t.factors.back() = row + 4 / elem_bytes;
    transform_layout(s, sid, t);
}

/// Stores the row operand's shared copy (its block region rows x k tile, k innermost) so that
/// the eight rows one fragment load reads are adjacent: a lane group g's rows lie 2 mi apart
/// in the block's row order ([.., g, mi, h]), so the rows are split [rows / (2 mi), 2 mi] and
/// the two parts swapped. Each row is padded by 16 bytes: rows stay aligned for 16-byte
/// fetches, and adjacent rows start 4 banks apart, so the 32 lanes' 32-bit fragment loads
/// (row g, word t) hit 32 different banks. Without the swap the rows 2 mi apart share banks.
void interleave_fragment_rows(State& s, int sid, int64_t mi, int64_t row, int64_t elem_bytes) {
    const size_t n = s.stages[sid].tensor.shape().size();
    LayoutTransform t;
    t.factors.assign(n, 1);
    t.factors[n - 2] = 2 * mi;
    t.factors[n - 1] = row + 16 / elem_bytes;
    // After splitting: batch dims, rows (outer, inner), k (1, row + pad).
    for (size_t d = 0; d + 2 < n; ++d)
        t.order.push_back(static_cast<int>(d));
    const int r = static_cast<int>(n) - 2;
    t.order.insert(t.order.end(), {r + 1, r, r + 2, r + 3});
    transform_layout(s, sid, t);
}

/// A shared copy fetched by all threads of the block: its loops fused, split into
/// [rest, threadIdx.y (warps), threadIdx.x (32 lanes), a vector of `vec` elements].
void bind_fetch(State& s, int sid, int64_t warps, int64_t vec) {
    std::vector<int> all(s.stages[sid].iters.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = static_cast<int>(i);
    const int fused = all.size() > 1 ? fuse(s, sid, all) : 0;
    const std::vector<int> parts = split(s, sid, fused, {warps, 32, vec});
    annotate(s, sid, parts[1], IterAnnotation::ThreadY);
    annotate(s, sid, parts[2], IterAnnotation::ThreadX);
    annotate(s, sid, parts[3], IterAnnotation::Vectorize);
}

/// The schedule of product p with tiles w. Throws ScheduleError when a step is illegal.
State build(const te::Compute& c, const Product& p, const TensorCoreTiles& w) {
    if (p.m % w.rows() != 0 || p.n % w.columns() != 0 ||
        p.k % (w.k_steps * ir::WarpMma::k_of(p.kind)) != 0)
        throw ScheduleError("tensor-core tiles of " + std::to_string(w.rows()) + " x " +
                            std::to_string(w.columns()) + " x " +
                            std::to_string(w.k_steps * ir::WarpMma::k_of(p.kind)) +
                            " do not divide the product " + std::to_string(p.m) + " x " +
                            std::to_string(p.n) + " x " + std::to_string(p.k));
    State s = inlined(c);
    // The accumulators: the product itself computed at the lane loop of its epilogue, or a
    // local cache of it whose copy-out is the output.
    const int local = p.epilogue >= 0 ? p.stage : cache_write(s, p.stage, "local");
    int out = p.epilogue >= 0 ? p.epilogue : local + 1;
    const int nb = static_cast<int>(s.stages[out].iters.size()) - 2; // batch axes
    // Output: [batch.., bi, wi, g, mi, h] x [bj, wj, t, nj, c].
    split(s, out, nb, {w.wi, 8, w.mi, 2});
    split(s, out, nb + 5, {w.wj, 4, w.nj, 2});
    std::vector<int> order;
    for (int d = 0; d < nb; ++d)
        order.push_back(d);
    for (int level = 0; level < 5; ++level) {
        order.push_back(nb + level);
        order.push_back(nb + 5 + level);
    }
    reorder(s, out, order);
    std::vector<int> blocks;
    for (int d = 0; d < nb + 2; ++d)
        blocks.push_back(d);
    annotate(s, out, fuse(s, out, blocks), IterAnnotation::BlockX);
    annotate(s, out, fuse(s, out, {1, 2}), IterAnnotation::ThreadY);
    const int lane = fuse(s, out, {2, 3});
    annotate(s, out, lane, IterAnnotation::ThreadX);
    // The copy-out reads the accumulators at constant indices only (registers, not local
    // memory): its mi, nj and h loops unrolled; c two adjacent columns, one float2 store.
    for (int id : {3, 4, 5})
        annotate(s, out, id, IterAnnotation::Unroll);
    annotate(s, out, 6, IterAnnotation::Vectorize);

    // Accumulators per lane: [batch.., mi, h] x [nj, c], k as [ko, kk, ki] (ko: one shared
    // fetch of k_tile, kk: its mma steps, ki: one mma's k).
    compute_at(s, local, out, lane);
    const int64_t step = ir::WarpMma::k_of(p.kind);
    const int64_t k_steps = w.k_steps;
    split(s, local, nb, {2});
    split(s, local, nb + 2, {2});
    split(s, local, nb + 4, {k_steps, step});
    order.clear();
    for (int d = 0; d < nb; ++d)
        order.push_back(d);
    for (int id : {4, 5, 0, 2, 6, 1, 3})
        order.push_back(nb + id);
    reorder(s, local, order);
    for (int id : {1, 2, 3, 5, 6})
        annotate(s, local, nb + id, IterAnnotation::Unroll);
    annotate(s, local, nb + 4, IterAnnotation::WarpMma);
    if (w.pipeline)
        annotate(s, local, nb, IterAnnotation::Pipeline);

    // Operands through shared memory, fetched at ko by every thread: the row operand with its
    // fragment rows adjacent in vectors of 16 bytes (0.62 against 0.72 ms on the f16 4096^3
    // gemm, H200), the other in vectors of 4 bytes (rows padded by one word stay 4-byte
    // aligned; its fragments read two rows of k, which a 16-byte padding would put in one bank).
    const int64_t warps = w.wi * w.wj;
    const int64_t elem_bytes = p.kind == ir::MmaKind::F16 ? 2 : 4;
    int a = p.a, b = p.b, target = local;
    for (int* input : {&a, &b}) {
        const bool rows_adjacent = input == &a && w.pad_rows && p.a_rows_then_k;
        const int copy = cache_read(s, *input, "shared", {target});
        for (int* id : {&a, &b, &target})
            if (*id >= copy)
                ++*id;
        compute_at(s, copy, target, nb);
        // Its rows: the innermost axis of the block's region (k for A; columns for B, or k
        // when B is stored transposed, as a dense layer's weights).
        const int64_t row = s.stages[copy].iters.back().extent;
        if (rows_adjacent)
            interleave_fragment_rows(s, copy, w.mi, row, elem_bytes);
        else if (w.pad_rows)
            pad_rows(s, copy, row, elem_bytes);
        bind_fetch(s, copy, warps, (rows_adjacent ? 16 : 4) / elem_bytes);
    }
    return s;
}

/// The product of c, or nullopt; ScheduleError from the state's construction counts as none.
std::optional<Product> product_of(const te::Compute& c, bool tf32) {
    try {
        return find_product(inlined(c), tf32);
    } catch (const ScheduleError&) {
        return std::nullopt;
    }
}

} // namespace

bool is_tensor_core_product(const te::Compute& c, bool tf32) {
    return product_of(c, tf32).has_value();
}

State tensor_core_schedule(const te::Compute& c, const TensorCoreTiles& tiles, bool tf32) {
    const std::optional<Product> p = product_of(c, tf32);
    if (!p)
        throw ScheduleError("not a matrix product with whole 16 x 8 x k tiles of f16 operands" +
                            std::string(tf32 ? " (or f32 for TF32)" : "") + " summed in f32");
    return build(c, *p, tiles);
}

namespace detail {

std::optional<State> gpu_tensor_core_schedule(const te::Compute& c,
                                              const DefaultScheduleOptions& opts) {
    const std::optional<Product> p = product_of(c, opts.gpu_tf32);
    if (!p)
        return std::nullopt;
    for (const TensorCoreTiles& w : tile_order(*p)) {
        try {
            State s = build(c, *p, w);
            const ir::Stmt lowered = lower::lower_warp_mmas(check_gpu(s, opts.gpu).body);
            if (ir::contains_call(lowered, ir::CallOp::WarpMma))
                return s;
        } catch (const ScheduleError&) {
            // The next, smaller tile.
        }
    }
    return std::nullopt;
}

} // namespace detail
} // namespace tessera::sched
