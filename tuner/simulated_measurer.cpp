// make_simulated_measurer: a deterministic stand-in for measuring, for tests of the search.
//
// The simulated time of a schedule is a cycle estimate of its lowered program (lower_state's
// output, where loops still carry Parallel / Vectorized / Unrolled) on an imagined machine
// with 8 cores, 8-lane vectors, a 32 KiB first-level and a 1 MiB second-level cache:
//   - compute: per store iteration, one op per load, store and arithmetic node; inside a
//     vectorized loop of v lanes an access is ceil(v / 8) ops when it is unit-stride in the
//     vectorized variable, 1 when it does not depend on it, v when it is a gather;
//   - loop overhead: one cycle per iteration of each serial loop (none for unrolled and
//     vectorized loops), so tiny inner loops cost;
//   - memory: per store, the footprint of its accesses over the loops inside level j (the
//     product of the extents of the loops each index depends on; strided innermost access
//     wastes cache lines) decides the outermost level whose inner nest fits each cache; the
//     data of that nest is refetched once per iteration of the loops outside it (32 B/cycle
//     from the second level, 8 B/cycle from memory);
//   - parallel: a store under a parallel loop of p iterations runs p / ceil(p / 8) times
//     faster (memory traffic at most 4 times), and each parallel loop costs 3000 cycles per
//     launch.
// The time is the sum over stores and loops at 3 GHz, times 1 +- 5% from a hash of (seed,
// schedule JSON). None of this is a claim about real hardware: it is a smooth, deterministic
// landscape with the shape of a real one, so tests can check that the search learns it.
#include "tessera/tuner/tune_task.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "tessera/ir/functor.h"
#include "tessera/ir/simplify.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/step.h"
#include "tessera/support/hash.h"

namespace tessera::tune {

namespace {

constexpr double kClockHz = 3e9;
constexpr int64_t kCores = 8;
constexpr int64_t kVectorLanes = 8;
constexpr double kL1Bytes = 32 * 1024;
constexpr double kL2Bytes = 1024 * 1024;
constexpr double kL2BytesPerCycle = 32;
constexpr double kMemBytesPerCycle = 8;
constexpr double kParallelLaunchCycles = 3000;
/// A nonlinear or unknown use of a variable in an index counts as this stride.
constexpr int64_t kUnknownStride = 64;

/// A uniform double in [0, 1) from a hash.
double unit_from_hash(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

/// Whether e reads variable v (through let-bound variables too).
class UsesVar : public ir::IRVisitor {
  public:
    UsesVar(const ir::Variable* v, const std::unordered_map<const ir::Variable*, ir::Expr>& lets)
        : v_(v), lets_(lets) {}
    using ir::IRVisitor::visit;
    void visit(const ir::Variable* op) override {
        if (op == v_) {
            found = true;
            return;
        }
        auto it = lets_.find(op);
        if (it != lets_.end())
            visit(it->second);
    }
    bool found = false;

  private:
    const ir::Variable* v_;
    const std::unordered_map<const ir::Variable*, ir::Expr>& lets_;
};

/// The cycle estimate of one lowered program (see the top of this file).
class CycleModel : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;

    double cycles = 0;

    void visit(const ir::For* op) override {
        const int64_t extent = std::max<int64_t>(0, upper_bound(op->extent));
        const ir::Interval min_range = ir::bounds_of(op->min, bounds_);
        const double trips_before = trips();
        loops_.push_back({op->loop_var.get(), extent, op->kind});
        if (op->kind == ir::ForKind::Serial)
            cycles += trips() / parallel_speedup();
        if (op->kind == ir::ForKind::Parallel)
            cycles += kParallelLaunchCycles * trips_before;
        ir::Interval r = ir::Interval::everything();
        if (min_range.bounded() && extent > 0)
            r = ir::Interval::range(min_range.min, min_range.max + extent - 1);
        bounds_[op->loop_var.get()] = r;
        visit(op->body);
        bounds_.erase(op->loop_var.get());
        loops_.pop_back();
    }

    void visit(const ir::LetStmt* op) override {
        visit(op->value);
        lets_[op->var.get()] = op->value;
        visit(op->body);
        lets_.erase(op->var.get());
    }

    void visit(const ir::Store* op) override {
        std::vector<Access> accesses{{op->index, op->buffer.dtype().bytes(), true}};
        int64_t arith = 0;
        collect(op->value, accesses, arith);
        store_cycles(accesses, arith);
    }

  private:
    struct Loop {
        const ir::Variable* var;
        int64_t extent;
        ir::ForKind kind;
    };
    struct Access {
        ir::Expr index;
        int bytes;
        bool is_store;
    };

    int64_t upper_bound(const ir::Expr& e) const {
        if (const ir::IntImm* imm = e.as<ir::IntImm>())
            return imm->value;
        const ir::Interval r = ir::bounds_of(e, bounds_);
        return r.has_max ? r.max : 1;
    }

    /// Iterations of the loops outside level `end` (all loops by default) taken together.
    double trips(std::optional<size_t> end = std::nullopt) const {
        double t = 1;
        const size_t stop = end ? std::min(*end, loops_.size()) : loops_.size();
        for (size_t k = 0; k < stop; ++k)
            t *= double(loops_[k].extent);
        return t;
    }

    /// How much faster the current loop nest runs for its outermost parallel loop of p
    /// iterations: p / ceil(p / cores) (1 without one).
    double parallel_speedup() const {
        for (const Loop& l : loops_)
            if (l.kind == ir::ForKind::Parallel) {
                const double p = double(std::max<int64_t>(1, l.extent));
                return p / std::ceil(p / double(kCores));
            }
        return 1;
    }

    /// Loads and arithmetic nodes of a stored value.
    void collect(const ir::Expr& e, std::vector<Access>& accesses, int64_t& arith) const {
        struct Collector : ir::IRVisitor {
            std::vector<Access>* accesses;
            int64_t* arith;
            using ir::IRVisitor::visit;
            void visit(const ir::Load* op) override {
                accesses->push_back({op->index, op->buffer.dtype().bytes(), false});
            }
            void visit(const ir::Add* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Sub* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Mul* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Div* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Min* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Max* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Select* op) override { ++*arith, visit_children(op); }
            void visit(const ir::Call* op) override { *arith += 8, visit_children(op); }
        } c;
        c.accesses = &accesses;
        c.arith = &arith;
        c.visit(e);
    }

    /// The coefficient of v in e when e is affine in v (0: independent), nullopt otherwise.
    std::optional<int64_t> coefficient(const ir::Expr& e, const ir::Variable* v) const {
        if (!e.defined() || e.as<ir::IntImm>() || e.as<ir::FloatImm>())
            return 0;
        if (const ir::Variable* x = e.as<ir::Variable>()) {
            if (x == v)
                return 1;
            auto it = lets_.find(x);
            return it == lets_.end() ? 0 : coefficient(it->second, v);
        }
        if (const ir::Add* a = e.as<ir::Add>()) {
            auto ca = coefficient(a->a, v), cb = coefficient(a->b, v);
            if (ca && cb)
                return *ca + *cb;
            return std::nullopt;
        }
        if (const ir::Sub* s = e.as<ir::Sub>()) {
            auto ca = coefficient(s->a, v), cb = coefficient(s->b, v);
            if (ca && cb)
                return *ca - *cb;
            return std::nullopt;
        }
        if (const ir::Mul* m = e.as<ir::Mul>()) {
            const ir::IntImm* ka = m->a.as<ir::IntImm>();
            const ir::IntImm* kb = m->b.as<ir::IntImm>();
            if (kb) {
                auto c = coefficient(m->a, v);
                return c ? std::optional<int64_t>(*c * kb->value) : std::nullopt;
            }
            if (ka) {
                auto c = coefficient(m->b, v);
                return c ? std::optional<int64_t>(*c * ka->value) : std::nullopt;
            }
        }
        if (const ir::Cast* c = e.as<ir::Cast>())
            return coefficient(c->value, v);
        UsesVar uses(v, lets_);
        uses.visit(e);
        if (uses.found)
            return std::nullopt;
        return 0;
    }

    /// |stride| of loop k's variable in `index`: 0 when independent.
    int64_t stride(const ir::Expr& index, size_t k) const {
        const std::optional<int64_t> c = coefficient(index, loops_[k].var);
        return c ? std::llabs(*c) : kUnknownStride;
    }

    void store_cycles(const std::vector<Access>& accesses, int64_t arith) {
        const size_t n = loops_.size();
        // The vectorized loop (the innermost one, if several) and the outermost parallel one.
        int vec = -1, par = -1;
        for (size_t k = 0; k < n; ++k) {
            if (loops_[k].kind == ir::ForKind::Vectorized)
                vec = int(k);
            if (loops_[k].kind == ir::ForKind::Parallel && par < 0)
                par = int(k);
        }
        const double iters = trips();
        // Compute: ops per iteration of the innermost body, per vector when vectorized.
        double ops = 0;
        double lanes = 1;
        if (vec >= 0) {
            lanes = double(std::max<int64_t>(1, loops_[vec].extent));
            const double vector_ops = std::ceil(lanes / kVectorLanes);
            for (const Access& a : accesses) {
                const int64_t s = stride(a.index, size_t(vec));
                if (s == 0)
                    ops += a.is_store ? lanes / 2 : 1; // store: a horizontal reduction
                else if (s == 1)
                    ops += vector_ops;
                else
                    ops += lanes; // gather / scatter
            }
            ops += double(arith) * vector_ops;
        } else {
            ops = double(accesses.size() + arith);
        }
        double compute = iters / lanes * ops;
        if (std::any_of(loops_.begin(), loops_.end(),
                        [](const Loop& l) { return l.kind == ir::ForKind::Unrolled; }))
            compute *= 0.85; // fewer loop branches and better scheduling of the body

        // Memory: footprint of the loops inside each level.
        std::vector<double> footprint(n + 1, 0);
        for (const Access& a : accesses) {
            std::vector<int64_t> strides(n);
            for (size_t k = 0; k < n; ++k)
                strides[k] = stride(a.index, k);
            for (size_t j = 0; j <= n; ++j) {
                double elems = 1;
                int64_t innermost_stride = 1;
                for (size_t k = j; k < n; ++k)
                    if (strides[k] != 0) {
                        elems *= double(loops_[k].extent);
                        innermost_stride = strides[k];
                    }
                const double waste = double(std::min<int64_t>(innermost_stride, 16));
                footprint[j] += elems * a.bytes * std::max(1.0, waste);
            }
        }
        auto traffic = [&](double capacity) {
            size_t j = 0;
            while (j < n && footprint[j] > capacity)
                ++j;
            return trips(j) * footprint[j];
        };
        double memory = traffic(kL1Bytes) / kL2BytesPerCycle;
        double dram = traffic(kL2Bytes) / kMemBytesPerCycle;

        if (par >= 0) {
            const double speedup = parallel_speedup();
            compute /= speedup;
            memory /= speedup;
            dram /= std::min(speedup, 4.0);
        }
        cycles += compute + memory + dram;
    }

    std::vector<Loop> loops_;
    ir::BoundsMap bounds_;
    std::unordered_map<const ir::Variable*, ir::Expr> lets_; // lookup only
};

class SimulatedMeasurer : public Measurer {
  public:
    SimulatedMeasurer(uint64_t seed, double error_share, MeasureError error_kind)
        : seed_(seed), error_share_(error_share), error_kind_(error_kind) {}

    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override {
        std::vector<MeasureResult> out;
        out.reserve(states.size());
        for (const sched::State& s : states)
            out.push_back(measure_one(s));
        return out;
    }

    std::string settings_json() const override {
        nlohmann::json j;
        j["measurer"] = "simulated";
        j["seed"] = seed_;
        j["error_share"] = error_share_;
        j["error_kind"] = to_string(error_kind_);
        return j.dump();
    }

  private:
    MeasureResult measure_one(const sched::State& s) const {
        MeasureResult r;
        const uint64_t h = hash_combine(seed_, hash_string(sched::steps_to_json(s.steps)));
        if (unit_from_hash(hash_combine(h, 0xe770)) < error_share_) {
            r.error = error_kind_;
            r.error_message = std::string("simulated ") + to_string(error_kind_) +
                              " (schedule hash in error_share)";
            if (error_kind_ == MeasureError::WrongAnswer)
                r.max_rel_error = 1;
            return r;
        }
        CycleModel model;
        try {
            model.visit(sched::lower_state(s, "simulated").body);
        } catch (const ScheduleError& e) {
            r.error = MeasureError::Instantiation;
            r.error_message = e.what();
            return r;
        }
        const double noise = 1 + 0.05 * (2 * unit_from_hash(hash_combine(h, 0x7153)) - 1);
        const double secs = std::max(model.cycles, 1.0) / kClockHz * noise;
        // Three repeats with a small deterministic spread; the median is `secs`.
        r.run_secs = {secs * 1.004, secs, secs * 1.002};
        return r;
    }

    uint64_t seed_;
    double error_share_;
    MeasureError error_kind_;
};

} // namespace

std::unique_ptr<Measurer> make_simulated_measurer(uint64_t seed, double error_share,
                                                  MeasureError error_kind) {
    if (!(error_share >= 0 && error_share <= 1))
        throw UserError() << "error_share must be in [0, 1], got " << error_share;
    if (error_kind == MeasureError::Ok)
        throw UserError() << "error_kind of the simulated measurer must be an error, got ok";
    return std::make_unique<SimulatedMeasurer>(seed, error_share, error_kind);
}

} // namespace tessera::tune
