// lower_state: a schedule State to loop IR (see lower_state.h for the scheme).
#include "tessera/schedule/lower_state.h"

#include <algorithm>

#include "../internal/body_util.h"
#include "../internal/bound.h"
#include "../internal/error_msg.h"
#include "../internal/iter_graph.h"
#include "../internal/partition.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/substitute.h"
#include "tessera/lower/lower_default.h"
#include "tessera/schedule/layout.h"
#include "tessera/te/tensor.h"

namespace tessera::sched {

using namespace ir;

namespace {

/// Leaf variables that an expression uses, as the largest leaf index (-1 when none).
int max_leaf_used(const Expr& e, const std::vector<Var>& leaves) {
    struct Finder : IRVisitor {
        using IRVisitor::visit;
        const std::vector<Var>* leaves;
        int best = -1;
        void visit(const Variable* op) override {
            for (size_t k = 0; k < leaves->size(); ++k)
                if ((*leaves)[k].get() == op)
                    best = std::max(best, static_cast<int>(k));
        }
    } f;
    f.leaves = &leaves;
    f.visit(e);
    return f.best;
}

class Lowerer;

/// Rewrites a stage body (or an inlined producer's body) into loop-IR expressions.
class BodyLowerer : public IRMutator {
  public:
    using IRMutator::visit;
    BodyLowerer(const Lowerer& l, VarMap m) : l_(l), m_(std::move(m)) {}
    Expr visit(const Variable* op) override {
        auto it = m_.find(op);
        return it == m_.end() ? Expr(op) : it->second;
    }
    Expr visit(const Let* op) override {
        Expr value = mutate(op->value);
        Var fresh(op->var.name(), op->var.type());
        m_[op->var.get()] = fresh;
        return Let::make(fresh, value, mutate(op->body));
    }
    Expr visit(const TensorRead* op) override;
    Expr visit(const Reduce* op) override {
        TESSERA_UNREACHABLE() << "nested Reduce in a stage body";
    }

  private:
    const Lowerer& l_;
    VarMap m_;
};

class Lowerer {
  public:
    Lowerer(const State& s, const LowerOptions& opts) : s_(s), opts_(opts) {}

    LoweredFunc run(const std::string& name) {
        loops_ = infer_bounds(s_);
        const size_t n = s_.stages.size();
        bufs_.resize(n);
        logical_.resize(n);
        for (size_t i = 0; i < n; ++i)
            for (size_t k = 0; k < loops_[i].leaf_vars.size(); ++k)
                leaf_bounds_[loops_[i].leaf_vars[k].get()] =
                    Interval::range(0, s_.stages[i].iters[k].extent - 1);

        LoweredFunc f;
        f.name = name;
        for (const Tensor& t : s_.compute.inputs)
            f.params.push_back(make_buffer(s_.stage_id_of(t)));
        for (const Tensor& t : s_.compute.outputs)
            f.params.push_back(make_buffer(s_.stage_id_of(t)));
        std::vector<int> root_temps;
        for (size_t i = 0; i < n; ++i) {
            const Stage& st = s_.stages[i];
            if (st.is_input() || st.location.kind == ComputeLocKind::Inlined || bufs_[i].defined())
                continue;
            make_buffer(static_cast<int>(i));
            if (st.location.kind == ComputeLocKind::Root)
                root_temps.push_back(static_cast<int>(i));
        }
        std::vector<Stmt> stmts;
        for (size_t i = 0; i < n; ++i) {
            const Stage& st = s_.stages[i];
            if (!st.is_input() && st.location.kind == ComputeLocKind::Root)
                stmts.push_back(build_stage(static_cast<int>(i), false));
        }
        TESSERA_CHECK(!stmts.empty()) << "state of '" << name << "' without root stages";
        Stmt body = Seq::make(std::move(stmts));
        for (size_t k = root_temps.size(); k-- > 0;) {
            const int sid = root_temps[k];
            const bool local = s_.stages[sid].scope != StageScope::Global;
            body = Allocate::make(bufs_[sid], local ? scope_of(sid) : MemoryScope::Heap, body);
        }
        if (opts_.partition_loops && !opts_.gpu)
            body = partition_loops(body);
        if (opts_.simplify)
            body = simplify(body);
        f.body = body;
        return f;
    }

    /// The flat buffer index of the element at global coordinates `idx` of stage sid.
    Expr load_index(int sid, std::vector<Expr> idx) const {
        const StageLoops& L = loops_[sid];
        if (L.attached)
            for (size_t d = 0; d < idx.size(); ++d)
                idx[d] = idx[d] - L.region[d].min;
        return storage_index(sid, idx);
    }

    Expr storage_index(int sid, const std::vector<Expr>& idx) const {
        const Stage& st = s_.stages[sid];
        if (st.layout.is_identity())
            return lower::flatten_index(logical_[sid], idx);
        return lower::flatten_index(packed_shape(st.layout, logical_[sid]),
                                    packed_indices(st.layout, logical_[sid], idx));
    }

    const State& state() const { return s_; }
    const Buffer& buffer(int sid) const { return bufs_[sid]; }

  private:
    Buffer make_buffer(int sid) {
        const Stage& st = s_.stages[sid];
        std::vector<int64_t> shape;
        if (loops_[sid].attached)
            for (const DimRegion& r : loops_[sid].region)
                shape.push_back(r.extent);
        else
            shape = st.tensor.shape();
        logical_[sid] = shape;
        if (!st.layout.is_identity()) {
            check_layout(st.layout, shape);
            shape = packed_shape(st.layout, shape);
        }
        bufs_[sid] = Buffer::make(st.tensor.name(), st.tensor.dtype(), shape);
        return bufs_[sid];
    }

    MemoryScope scope_of(int sid) const {
        if (opts_.gpu)
            return s_.stages[sid].scope == StageScope::Shared ? MemoryScope::Shared
                                                               : MemoryScope::Local;
        const Buffer& b = bufs_[sid];
        const int64_t bytes = b->num_elements() * b.dtype().bytes();
        return bytes <= opts_.stack_limit_bytes ? MemoryScope::Stack : MemoryScope::Heap;
    }

    struct Guard {
        Expr cond;
        int level; ///< Placed inside loop level-1 (0: around the whole nest).
        bool spatial;
    };

    ForKind kind_of(const Iterator& it, bool& in_parallel) const {
        if (opts_.gpu) {
            const ForKind k = gpu_kind_of(it.annotation);
            // Threads that each accumulate into the same element would race: the one form of
            // reduction across threads that is lowered (cross_thread_iter) never gets here.
            if (is_gpu_kind(k) && k != ForKind::GpuVThread && it.kind == IterKind::Reduce)
                throw ScheduleError(Msg() << "reduce loop '" << it.name << "' bound to "
                                          << to_string(k) << " (cross-thread reduction)");
            return k;
        }
        switch (it.annotation) {
        case IterAnnotation::Parallel:
            if (in_parallel)
                return ForKind::Serial; // nested parallel loops run serially
            in_parallel = true;
            return ForKind::Parallel;
        case IterAnnotation::Vectorize:
            return ForKind::Vectorized;
        case IterAnnotation::Unroll:
            return ForKind::Unrolled;
        case IterAnnotation::TileMatmul:
            return ForKind::TileMatmul;
        case IterAnnotation::WarpMma: // its loops as written, as GPU bindings become serial
        case IterAnnotation::Pipeline: // loops here (a GPU state's features read this form)
            return ForKind::Serial;
        case IterAnnotation::None:
        case IterAnnotation::BlockX:
        case IterAnnotation::BlockY:
        case IterAnnotation::BlockZ:
        case IterAnnotation::VThread:
        case IterAnnotation::ThreadX:
        case IterAnnotation::ThreadY:
        case IterAnnotation::ThreadZ:
            return ForKind::Serial;
        }
        TESSERA_UNREACHABLE();
    }

    /// The loop kind of an annotation when lowering for a GPU.
    static ForKind gpu_kind_of(IterAnnotation a) {
        switch (a) {
        case IterAnnotation::WarpMma: return ForKind::WarpMma;
        case IterAnnotation::Pipeline: return ForKind::Pipelined;
        case IterAnnotation::None:
        case IterAnnotation::TileMatmul: // CPU matrix tiles
        case IterAnnotation::Parallel: return ForKind::Serial; // no host threads inside a kernel
        case IterAnnotation::Vectorize: return ForKind::Vectorized;
        case IterAnnotation::Unroll: return ForKind::Unrolled;
        case IterAnnotation::BlockX: return ForKind::GpuBlockX;
        case IterAnnotation::BlockY: return ForKind::GpuBlockY;
        case IterAnnotation::BlockZ: return ForKind::GpuBlockZ;
        case IterAnnotation::VThread: return ForKind::GpuVThread;
        case IterAnnotation::ThreadX: return ForKind::GpuThreadX;
        case IterAnnotation::ThreadY: return ForKind::GpuThreadY;
        case IterAnnotation::ThreadZ: return ForKind::GpuThreadZ;
        }
        TESSERA_UNREACHABLE();
    }

    /// auto_unroll_max_step: a serial loop whose trip count times that of the loops inside it
    /// (of this nest) is at most max_step (a stage's pragma) is unrolled.
    std::vector<bool> auto_unrolled(const Stage& st, const std::vector<int>& levels,
                                    int64_t max_step) const {
        std::vector<bool> out(levels.size(), false);
        if (max_step <= 0)
            return out;
        int64_t prod = 1;
        for (size_t k = levels.size(); k-- > 0;) {
            prod *= st.iters[levels[k]].extent;
            if (prod > max_step)
                break;
            out[k] = st.iters[levels[k]].annotation == IterAnnotation::None;
        }
        return out;
    }

    /// Marks in `unrolled` (one flag per loop of stage sid) the loops that read a local
    /// cache_write stage back, those inside the loop it is computed at, as that stage's own
    /// pragma unrolls its loops: every access to the tile's buffer then has a constant index
    /// and code generation keeps the tile in registers. (Rolled, the copy-out of a 7 x 32
    /// accumulator tile went through the stack: 4.5% of resnet18's batched products.)
    void unroll_cache_readback(int sid, std::vector<bool>& unrolled) const {
        const Stage& st = s_.stages[sid];
        const int n = static_cast<int>(st.iters.size());
        for (int k = 0; k < n; ++k) {
            for (int a : s_.attached_at(sid, k)) {
                const Stage& cache = s_.stages[a];
                if (cache.origin != StageOrigin::CacheWrite || cache.scope != StageScope::Local)
                    continue;
                std::vector<int> inner;
                for (int j = k + 1; j < n; ++j)
                    inner.push_back(j);
                const std::vector<bool> u = auto_unrolled(st, inner, cache.auto_unroll_max_step);
                for (size_t j = 0; j < inner.size(); ++j)
                    if (u[j])
                        unrolled[static_cast<size_t>(inner[j])] = true;
            }
        }
    }

    Stmt build_stage(int sid, bool in_parallel) {
        const Stage& st = s_.stages[sid];
        const StageLoops& L = loops_[sid];
        const size_t ndim = st.tensor.ndim();
        VarMap m;
        for (size_t d = 0; d < ndim; ++d)
            m[st.axes[d].get()] = L.coords[d];
        const auto raxes = st.reduce_axes();
        for (size_t r = 0; r < raxes.size(); ++r)
            m[raxes[r].var.get()] = L.values[ndim + r];
        std::vector<Expr> local(L.values.begin(), L.values.begin() + ndim);
        const Expr index = storage_index(sid, local);
        const Buffer& buf = bufs_[sid];

        // Guards: imperfect splits, regions that may leave the tensor, rfactor predicates.
        std::vector<Guard> guards;
        auto add_guard = [&](const Expr& c, bool spatial) {
            if (can_prove(c, leaf_bounds_))
                return;
            guards.push_back({c, max_leaf_used(c, L.leaf_vars) + 1, spatial});
        };
        {
            std::vector<Expr> sg = split_guards(st, L.values);
            size_t gi = 0;
            for (const IterRelation& r : st.relations) {
                if (r.kind != IterRelation::Kind::Split)
                    continue;
                int64_t prod = 1;
                for (int o : r.outputs)
                    prod *= st.nodes[o].extent;
                if (prod > st.nodes[r.inputs[0]].extent)
                    add_guard(sg[gi++], st.nodes[r.inputs[0]].kind == IterKind::Spatial);
            }
        }
        if (L.attached) {
            for (size_t d = 0; d < ndim; ++d) {
                add_guard(L.coords[d] < Expr(st.tensor.shape()[d]), true);
                add_guard(L.coords[d] >= Expr(0), true);
            }
        }
        if (st.predicate.defined())
            add_guard(BodyLowerer(*this, m).mutate(st.predicate), false);

        Stmt innermost;
        const auto* red = st.body.as<Reduce>();
        if (red) {
            Expr src = BodyLowerer(*this, m).mutate(red->source);
            innermost = Store::make(buf, reduce_combine(red->op, Load::make(buf, index), src), index);
        } else {
            innermost = Store::make(buf, BodyLowerer(*this, m).mutate(st.body), index);
        }

        Nest nest{sid, st,     L, guards,   innermost, Stmt(), -1,
                  {},  Stmt(), 0, Buffer(), Expr(),    index};
        if (red) {
            for (size_t k = 0; k < st.iters.size(); ++k)
                if (st.iters[k].kind == IterKind::Reduce) {
                    nest.init_level = static_cast<int>(k);
                    break;
                }
            // Guards of the update alone (reduce splits, rfactor predicates) go inside the
            // first reduce loop, so that they never skip the identity store.
            for (Guard& g : guards)
                if (!g.spatial)
                    g.level = std::max(g.level, nest.init_level + 1);
        }
        std::vector<int> all(st.iters.size());
        for (size_t k = 0; k < all.size(); ++k)
            all[k] = static_cast<int>(k);
        nest.unrolled = auto_unrolled(st, all, st.auto_unroll_max_step);
        unroll_cache_readback(nest.sid, nest.unrolled);
        const int xt = red && opts_.gpu ? cross_thread_iter(st) : -1;
        if (xt >= 0) {
            const Expr src = BodyLowerer(*this, m).mutate(red->source);
            nest.cross_thread = build_cross_thread(nest, xt, red->op, src, index);
        } else if (red) {
            nest.init = build_init(st, L, guards, nest.init_level, index,
                                   reduce_identity(red->op, st.tensor.dtype()), in_parallel);
            nest.per_block = partial_sum_block(sid, nest.init_level);
            if (nest.per_block > 0) {
                // The partial tile: one element per iteration of the spatial loops inside the
                // blocked loop, row-major in their order.
                std::vector<int64_t> shape;
                Expr at = Expr(int64_t{0});
                for (int k : spatial_levels_from(st, nest.init_level + 1)) {
                    shape.push_back(st.iters[k].extent);
                    at = at * Expr(st.iters[k].extent) + Expr(L.leaf_vars[k]);
                }
                nest.partial = Buffer::make(buf->name + "_part", buf.dtype(), shape);
                nest.partial_index = at;
                const Expr src = BodyLowerer(*this, m).mutate(red->source);
                nest.innermost = Store::make(
                    nest.partial, reduce_combine(red->op, Load::make(nest.partial, at), src), at);
            }
        }
        return build_level(nest, 0, in_parallel);
    }

    /// Partial sums: a float sum over kMinBlockedTerms or more terms whose outermost reduce
    /// loop holds a tile of at most kMaxPartialSumTile outputs (registers or L1) runs that
    /// loop in blocks of at least kBlockTerms terms, each summed from zero into a partial
    /// tile and then added to the stage's buffer (as oneDNN's and ONNX Runtime's kernels add
    /// each K block into C). One running sum over n terms rounds with an error
    /// that grows as n; blocks of b terms give about sqrt(n b + n^2 / b): fcn_resnet50's
    /// 2048 -> 512 head conv (18432 terms per output) erred ten times as much as ONNX Runtime
    /// against float64 with one. The extra cost is one add per tile element and block.
    /// Returns the iterations of that loop per block: the least divisor of its extent from
    /// the fewest that make a block to twice that, else that fewest with a guarded last
    /// block; 0 for one running sum.
    int64_t partial_sum_block(int sid, int level) const {
        const Stage& st = s_.stages[sid];
        const auto* red = st.body.as<Reduce>();
        if (!opts_.partial_sums || opts_.gpu || !red || red->op != ReduceOp::Sum ||
            !st.tensor.dtype().is_float() || level < 0)
            return 0;
        int64_t tile = 1;
        for (int k : spatial_levels_from(st, level + 1))
            tile *= st.iters[k].extent;
        if (tile > kMaxPartialSumTile)
            return 0;
        const int64_t terms = s_.reduce_size(sid);
        const int64_t extent = st.iters[static_cast<size_t>(level)].extent;
        if (terms < kMinBlockedTerms || extent < 2)
            return 0;
        const int64_t per_iteration = terms / extent;
        const int64_t least = (kBlockTerms + per_iteration - 1) / per_iteration;
        if (least * 2 > extent)
            return 0;
        for (int64_t per_block = least; per_block <= 2 * least; ++per_block)
            if (extent % per_block == 0)
                return per_block;
        return least;
    }

    static constexpr int64_t kMinBlockedTerms = 1024;
    static constexpr int64_t kBlockTerms = 256;
    /// A tile's elements at most (a register tile of 32 vectors of 16 lanes is 512).
    static constexpr int64_t kMaxPartialSumTile = 4096;

    struct Nest {
        int sid;
        const Stage& st;
        const StageLoops& L;
        const std::vector<Guard>& guards;
        Stmt innermost;
        Stmt init;
        int init_level;
        std::vector<bool> unrolled;
        /// A cross-thread reduction: replaces the init and every loop from init_level on.
        Stmt cross_thread;
        /// Partial sums (partial_sum_block): the loop at init_level runs in blocks of
        /// per_block iterations (0: one running sum); the update accumulates into `partial`
        /// at partial_index (the spatial loops inside that loop, row-major), which each block
        /// sets to zero before and adds into the stage buffer (at `index`) after.
        int64_t per_block;
        Buffer partial;
        Expr partial_index;
        Expr index;
    };

    /// GPU only: the reduce iterator bound to threadIdx.x when the stage is a cross-thread
    /// reduction (the only thread-bound reduce loop, no spatial loop and no attached stage
    /// inside the first reduce loop); -1 otherwise (kind_of rejects other thread-bound
    /// reduce loops).
    int cross_thread_iter(const Stage& st) const {
        int xt = -1, r0 = -1;
        for (size_t k = 0; k < st.iters.size(); ++k) {
            const Iterator& it = st.iters[k];
            if (it.kind == IterKind::Reduce && r0 < 0)
                r0 = static_cast<int>(k);
            if (it.kind != IterKind::Reduce || it.annotation == IterAnnotation::VThread ||
                !is_gpu_kind(gpu_kind_of(it.annotation)))
                continue;
            if (it.annotation != IterAnnotation::ThreadX || xt >= 0)
                return -1;
            xt = static_cast<int>(k);
        }
        if (xt < 0)
            return -1;
        const int sid = s_.stage_id_of(st.tensor);
        for (size_t k = r0; k < st.iters.size(); ++k) {
            if (st.iters[k].kind == IterKind::Spatial || !s_.attached_at(sid, int(k)).empty())
                throw ScheduleError(Msg() << "cross-thread reduction of '" << st.tensor.name()
                                          << "' with a spatial loop or an attached stage "
                                             "inside its reduce loops");
        }
        if (!st.tensor.dtype().is_float())
            throw ScheduleError(Msg() << "cross-thread reduction of '" << st.tensor.name()
                                      << "' of type " << st.tensor.dtype() << " (floats only)");
        return xt;
    }

    /// A reduction whose reduce iterator xt is bound to threadIdx.x, as the code inside the
    /// spatial loops (level nest.init_level): each thread accumulates its slice into a one-element
    /// Local buffer (f32 for f16 stages), the block combines the threads' values
    /// (CallOp::GpuBlockSum/Max/Min, evaluated by every thread in uniform control flow), and
    /// thread 0 stores the result. Guards of the update (reduce splits) wrap the accumulation
    /// only, so that every thread reaches the block reduction.
    Stmt build_cross_thread(const Nest& nest, int xt, ReduceOp op, const Expr& src,
                            const Expr& index) {
        const Stage& st = nest.st;
        const DataType t = st.tensor.dtype();
        const DataType acc_t = t.bits < 32 ? DataType::f32() : t;
        const Buffer acc = Buffer::make(st.tensor.name() + "_red", acc_t, {1});
        const Expr zero = make_zero(DataType::i64());
        Stmt update = Store::make(acc, reduce_combine(op, Load::make(acc, zero), cast(acc_t, src)),
                                  zero);
        for (const Guard& g : nest.guards)
            if (g.level > nest.init_level)
                update = IfThenElse::make(g.cond, update);
        const int n = static_cast<int>(st.iters.size());
        for (int k = n; k-- > nest.init_level;) {
            if (k == xt)
                continue;
            bool par = false;
            ForKind kind = kind_of(st.iters[k], par);
            if (kind == ForKind::Serial && nest.unrolled[k])
                kind = ForKind::Unrolled;
            update = For::make(nest.L.leaf_vars[k], Expr(0), Expr(st.iters[k].extent), kind, update);
        }
        const Var tx = nest.L.leaf_vars[xt];
        Stmt body = Seq::make({
            Store::make(acc, reduce_identity(op, acc_t), zero),
            update,
            Store::make(acc, Call::make(gpu_block_reduce_op(op), {Load::make(acc, zero)}), zero),
            IfThenElse::make(EQ::make(Expr(tx), make_zero(tx.type())),
                             Store::make(bufs_[nest.sid], cast(t, Load::make(acc, zero)), index)),
        });
        body = Allocate::make(acc, MemoryScope::Local, body);
        return For::make(tx, Expr(0), Expr(st.iters[xt].extent), ForKind::GpuThreadX, body);
    }

    /// The identity stores before the first reduce loop: a nest over the spatial loops inside
    /// that position, with fresh variables.
    Stmt build_init(const Stage& st, const StageLoops& L, const std::vector<Guard>& guards, int r0,
                    const Expr& index, const Expr& identity, bool in_parallel) {
        const Buffer& buf = bufs_[loops_index(L)];
        return build_spatial_nest(st, L, guards, r0, in_parallel, [&](const VarMap& fresh) {
            return Store::make(buf, identity, substitute(index, fresh));
        });
    }

    /// The blocks of partial sums (Nest::partial) in place of loop `level`: in each, the
    /// partial tile set to zero, the block's iterations of the loop accumulating into it,
    /// then the tile added into the stage buffer. `inner` is the code inside the loop.
    Stmt build_partial_block(const Nest& nest, int level, ForKind kind, const Stmt& inner,
                             bool in_parallel) {
        const Stage& st = nest.st;
        const Buffer& buf = bufs_[nest.sid];
        const Expr zero = reduce_identity(ReduceOp::Sum, buf.dtype());
        const Stmt clear = build_spatial_nest(
            st, nest.L, nest.guards, level + 1, in_parallel, [&](const VarMap& fresh) {
                return Store::make(nest.partial, zero, substitute(nest.partial_index, fresh));
            });
        const Stmt add = build_spatial_nest(
            st, nest.L, nest.guards, level + 1, in_parallel, [&](const VarMap& fresh) {
                const Expr i = substitute(nest.index, fresh);
                const Expr p = substitute(nest.partial_index, fresh);
                return Store::make(
                    buf,
                    reduce_combine(ReduceOp::Sum, Load::make(buf, i), Load::make(nest.partial, p)),
                    i);
            });
        const int64_t extent = st.iters[static_cast<size_t>(level)].extent;
        const int64_t per_block = nest.per_block;
        const Var k = nest.L.leaf_vars[static_cast<size_t>(level)];
        const Var block(k.name() + "_block", DataType::i64());
        const Var step(k.name() + "_step", DataType::i64());
        const Expr iteration = Expr(block) * Expr(per_block) + Expr(step);
        Substituter sub;
        sub.values[k.get()] = iteration;
        Stmt body = sub.mutate(inner);
        if (extent % per_block != 0)
            body = IfThenElse::make(iteration < Expr(extent), body);
        body = For::make(step, Expr(0), Expr(per_block), kind, body);
        body = Allocate::make(nest.partial, MemoryScope::Stack, Seq::make({clear, body, add}));
        return For::make(block, Expr(0), Expr((extent + per_block - 1) / per_block),
                         ForKind::Serial, body);
    }

    /// The levels of st's spatial loops from level r0 on, outer to inner.
    static std::vector<int> spatial_levels_from(const Stage& st, int r0) {
        std::vector<int> levels;
        for (size_t k = static_cast<size_t>(std::max(r0, 0)); k < st.iters.size(); ++k)
            if (st.iters[k].kind == IterKind::Spatial)
                levels.push_back(static_cast<int>(k));
        return levels;
    }

    /// A nest over the spatial loops of st from level r0 on, with fresh variables, around
    /// body(fresh) (the map from the stage's leaf variables to them), guarded as the stage's
    /// spatial guards inside r0.
    template <typename MakeBody>
    Stmt build_spatial_nest(const Stage& st, const StageLoops& L, const std::vector<Guard>& guards,
                            int r0, bool in_parallel, const MakeBody& make_body) {
        const std::vector<int> levels = spatial_levels_from(st, r0);
        VarMap fresh;
        std::vector<Var> vars;
        for (int k : levels) {
            vars.emplace_back(L.leaf_vars[k].name(), DataType::i64());
            fresh[L.leaf_vars[k].get()] = vars.back();
        }
        Stmt body = make_body(fresh);
        for (const Guard& g : guards)
            if (g.spatial && g.level > r0)
                body = IfThenElse::make(substitute(g.cond, fresh), body);
        const std::vector<bool> unrolled = auto_unrolled(st, levels, st.auto_unroll_max_step);
        for (size_t j = levels.size(); j-- > 0;) {
            bool par = in_parallel;
            ForKind kind = kind_of(st.iters[levels[j]], par);
            if (kind == ForKind::Parallel)
                kind = ForKind::Serial; // init nests sit inside the stage's outer loops
            if (kind == ForKind::Serial && unrolled[j])
                kind = ForKind::Unrolled;
            const int64_t saved = enter_loop(kind, st.iters[levels[j]], st);
            copies_ = saved;
            body = For::make(vars[j], Expr(0), Expr(st.iters[levels[j]].extent), kind, body);
        }
        return body;
    }

    /// Checks the limits of vector width and of code duplication by unrolling (an unrolled
    /// loop inside others multiplies their copies); returns the copy count to restore.
    int64_t enter_loop(ForKind kind, const Iterator& it, const Stage& st) {
        const int64_t saved = copies_;
        if (kind == ForKind::Vectorized && it.extent > kMaxVectorLanes)
            throw ScheduleError(Msg() << "vectorized loop '" << it.name << "' of '"
                                      << st.tensor.name() << "' has " << it.extent
                                      << " lanes (at most " << kMaxVectorLanes << ")");
        if (kind == ForKind::Unrolled || kind == ForKind::Vectorized) {
            copies_ *= it.extent;
            if (copies_ > kMaxUnrolledCopies)
                throw ScheduleError(Msg() << "unrolling loop '" << it.name << "' of '"
                                          << st.tensor.name() << "' makes more than "
                                          << kMaxUnrolledCopies << " copies of its body");
        }
        return saved;
    }

    static constexpr int64_t kMaxVectorLanes = 64;
    static constexpr int64_t kMaxUnrolledCopies = 4096;
    int64_t copies_ = 1;

    int loops_index(const StageLoops& L) const { return static_cast<int>(&L - loops_.data()); }

    /// The code inside loop k-1 of the nest (k = 0: the whole nest).
    Stmt build_level(const Nest& nest, int k, bool in_parallel) {
        const Stage& st = nest.st;
        const int n = static_cast<int>(st.iters.size());
        std::vector<Stmt> items;
        std::vector<int> attached;
        if (k > 0)
            attached = s_.attached_at(nest.sid, k - 1);
        for (int a : attached)
            items.push_back(build_stage(a, in_parallel));
        if (nest.init.defined() && k == nest.init_level)
            items.push_back(nest.init);
        if (nest.cross_thread.defined() && k == nest.init_level) {
            items.push_back(nest.cross_thread);
        } else if (k == n) {
            items.push_back(nest.innermost);
        } else {
            bool par = in_parallel;
            ForKind kind = kind_of(st.iters[k], par);
            if (kind == ForKind::Serial && nest.unrolled[k])
                kind = ForKind::Unrolled;
            const int64_t saved = enter_loop(kind, st.iters[k], st);
            Stmt inner = build_level(nest, k + 1, par);
            copies_ = saved;
            if (nest.per_block > 0 && k == nest.init_level)
                items.push_back(build_partial_block(nest, k, kind, inner, par));
            else
                items.push_back(
                    For::make(nest.L.leaf_vars[k], Expr(0), Expr(st.iters[k].extent), kind, inner));
        }
        Stmt body = Seq::make(std::move(items));
        for (const Guard& g : nest.guards)
            if (g.level == k)
                body = IfThenElse::make(g.cond, body);
        for (size_t j = attached.size(); j-- > 0;)
            body = Allocate::make(bufs_[attached[j]], scope_of(attached[j]), body);
        return body;
    }

    State s_;
    LowerOptions opts_;
    std::vector<StageLoops> loops_;
    std::vector<Buffer> bufs_;
    std::vector<std::vector<int64_t>> logical_;
    BoundsMap leaf_bounds_;
};

Expr BodyLowerer::visit(const TensorRead* op) {
    std::vector<Expr> idx;
    for (const Expr& i : op->indices)
        idx.push_back(mutate(i));
    const State& s = l_.state();
    const int sid = s.stage_id_of(op->tensor);
    TESSERA_CHECK(sid >= 0) << "read of tensor '" << op->tensor.name() << "' without a stage";
    const Stage& p = s.stages[sid];
    if (p.location.kind == ComputeLocKind::Inlined) {
        VarMap m;
        for (size_t d = 0; d < p.axes.size(); ++d)
            m[p.axes[d].get()] = idx[d];
        return BodyLowerer(l_, std::move(m)).mutate(p.body);
    }
    return Load::make(l_.buffer(sid), l_.load_index(sid, idx));
}

} // namespace

LoweredFunc lower_state(const State& s, const std::string& name, const LowerOptions& opts) {
    return Lowerer(s, opts).run(name);
}

} // namespace tessera::sched
