// Loop partitioning of padded loops: a guard that fails in the first iterations of a loop (the
// border of a padded axis) and holds in its middle splits the loop into head, interior and
// tail, so the interior of a padding stage loads through a plain affine index (a contiguous
// vector load) instead of a clamped one that does not vectorize. Checked on odd sizes, with the
// numerics of every schedule against the unscheduled nest.
#include "schedule_test_util.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/schedule/default_schedule.h"

namespace tessera::testing {
namespace {

/// The loops named `name` with a constant minimum of 1 (an interior split off a head), and how
/// many clamps (min or max) inside them use their loop variable.
struct InteriorFinder : ir::IRVisitor {
    using ir::IRVisitor::visit;
    std::string name;
    int interiors = 0;
    int clamps = 0;
    const ir::Variable* interior = nullptr; ///< The innermost such loop's variable.
    void visit(const ir::For* op) override {
        const int64_t* mn = ir::as_const_int(op->min);
        const ir::Variable* outer = interior;
        if (op->loop_var->name == name && mn && *mn == 1) {
            ++interiors;
            interior = op->loop_var.get();
        }
        ir::IRVisitor::visit(op);
        interior = outer;
    }
    void visit(const ir::Min* op) override {
        count(op);
        ir::IRVisitor::visit(op);
    }
    void visit(const ir::Max* op) override {
        count(op);
        ir::IRVisitor::visit(op);
    }
    template <class Clamp> void count(const Clamp* op) {
        struct Uses : ir::IRVisitor {
            using ir::IRVisitor::visit;
            const ir::Variable* v;
            bool found = false;
            void visit(const ir::Variable* op) override { found = found || op == v; }
        } uses;
        uses.v = interior;
        if (!interior)
            return;
        uses.visit(ir::Expr(op));
        clamps += uses.found;
    }
};

TEST(PadPartition, InteriorColumnsOfAPadStageLoadWithoutClamps) {
    // Convs whose tiles each read every input channel keep their padding stage whole, before
    // the nest (a depthwise conv's is computed per tile: DefaultSchedule tests).
    for (const char* spec : {"conv2d:n=1,c=3,h=21,w=37,k=40,r=3,s=3,stride=1,pad=1",
                             "conv2d:n=1,c=5,h=17,w=29,k=40,r=5,s=5,stride=1,pad=2"}) {
        sched::DefaultScheduleOptions o;
        o.num_cores = 2;
        o.vector_lanes = 8;
        const sched::State s = sched::default_schedule(op_compute(spec), o);
        const ir::LoweredFunc f = sched::lower_state(s, "padded");
        InteriorFinder find;
        find.name = "i3.0";
        find.visit(f.body);
        EXPECT_GE(find.interiors, 1) << spec << "\n" << ir::to_string(f);
        EXPECT_EQ(find.clamps, 0) << spec << "\n" << ir::to_string(f);
        expect_state_matches(s);
    }
}

TEST(PadPartition, ASmallMiddleRangeIsNotSplitOff) {
    // A padding stage whose rows of all channels are one fused parallel loop: each channel's
    // interior rows are a short range of it, not most of it, so the loop keeps one body (no
    // head, interior and tail copies for 1/c of its iterations).
    sched::DefaultScheduleOptions o;
    o.num_cores = 2;
    o.vector_lanes = 8;
    const sched::State s = sched::default_schedule(
        op_compute("conv2d:n=1,c=32,h=112,w=112,k=64,r=3,s=3,stride=1,pad=1"), o);
    const ir::LoweredFunc f = sched::lower_state(s, "padded");
    struct FirstParallel : ir::IRVisitor {
        using ir::IRVisitor::visit;
        const ir::For* loop = nullptr;
        void visit(const ir::For* op) override {
            if (!loop && op->kind == ir::ForKind::Parallel)
                loop = op;
            ir::IRVisitor::visit(op);
        }
    } first;
    first.visit(f.body);
    ASSERT_NE(first.loop, nullptr) << ir::to_string(f);
    EXPECT_EQ(first.loop->body.as<ir::IfThenElse>(), nullptr) << ir::to_string(f);
}

} // namespace
} // namespace tessera::testing
