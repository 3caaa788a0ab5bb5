// Loop partitioning of a parallel loop over imperfect tiles: the full tiles and the partial
// one stay in one parallel loop (its iterations branch), so the partial tile runs beside the
// others instead of alone after a join; empty tiles past the end are dropped.
#include "schedule_test_util.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/printer.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/te/op_library.h"

namespace tessera::testing {
namespace {

using sched::State;

struct LoopCounter : ir::IRVisitor {
    using ir::IRVisitor::visit;
    int loops = 0, parallel = 0, ifs = 0;
    void visit(const ir::For* op) override {
        ++loops;
        parallel += op->kind == ir::ForKind::Parallel;
        ir::IRVisitor::visit(op);
    }
    void visit(const ir::IfThenElse* op) override {
        ++ifs;
        ir::IRVisitor::visit(op);
    }
};

LoopCounter count_loops(const ir::LoweredFunc& f) {
    LoopCounter c;
    c.visit(f.body);
    return c;
}

/// matmul with rows split (blocks of `block` rows, tiles of 6) and the block loop parallel.
State row_blocks(int64_t m, int64_t block_tiles) {
    State s = sched::make_initial_state(op_compute("matmul:m=" + std::to_string(m) + ",n=19,k=7"));
    sched::split(s, 2, 0, {block_tiles, 6}); // i.0, i.1, i.2, j, k
    sched::parallel(s, 2, 0);
    sched::vectorize(s, 2, 3);
    return s;
}

TEST(ParallelPartition, ImperfectParallelLoopStaysOneLoop) {
    // 100 rows in blocks of 12: 8 full blocks and one of 4 rows (a partial 6-row tile).
    State s = row_blocks(100, 2);
    const ir::LoweredFunc f = sched::lower_state(s, "blocks");
    const LoopCounter c = count_loops(f);
    EXPECT_EQ(c.parallel, 1) << ir::to_string(f);
    // The branch between full and partial blocks, and the partial block's own guards.
    EXPECT_GE(c.ifs, 1) << ir::to_string(f);
    expect_state_matches(s);
}

TEST(ParallelPartition, FullBlocksHaveNoGuards) {
    // The parallel loop's body branches on the block index; its then-branch (the full blocks)
    // holds no further condition.
    State s = row_blocks(100, 2);
    const ir::LoweredFunc f = sched::lower_state(s, "blocks");
    const ir::For* par = nullptr;
    struct Find : ir::IRVisitor {
        using ir::IRVisitor::visit;
        const ir::For** out;
        void visit(const ir::For* op) override {
            if (op->kind == ir::ForKind::Parallel && !*out)
                *out = op;
            ir::IRVisitor::visit(op);
        }
    } find;
    find.out = &par;
    find.visit(f.body);
    ASSERT_NE(par, nullptr);
    const auto* branch = par->body.as<ir::IfThenElse>();
    ASSERT_NE(branch, nullptr) << ir::to_string(f);
    LoopCounter full;
    full.visit(branch->then_case);
    EXPECT_EQ(full.ifs, 0) << ir::to_string(f);
    // The last block (rows 96..99) is one partial tile and an empty one: the empty tile is
    // dropped and the single partial tile needs no loop over tiles nor any guard.
    ASSERT_TRUE(branch->else_case.defined());
    LoopCounter rest;
    rest.visit(branch->else_case);
    EXPECT_EQ(rest.ifs, 0) << ir::to_string(f);
    EXPECT_EQ(rest.loops, full.loops - 1) << ir::to_string(f);
}

TEST(ParallelPartition, OddSizesAndPerfectBlocks) {
    for (int64_t m : {1, 7, 13, 127, 120}) {
        SCOPED_TRACE("m=" + std::to_string(m));
        State s = row_blocks(m, 2);
        expect_state_matches(s);
        if (m == 120) { // 10 full blocks: nothing to partition, no branch
            EXPECT_EQ(count_loops(sched::lower_state(s, "b")).ifs, 0);
        }
    }
}

/// Counts the guards inside loops of a statement (the ones each iteration of a loop tests).
struct GuardsInLoops : ir::IRVisitor {
    using ir::IRVisitor::visit;
    int depth = 0, guards = 0;
    void visit(const ir::For* op) override {
        ++depth;
        ir::IRVisitor::visit(op);
        --depth;
    }
    void visit(const ir::IfThenElse* op) override {
        guards += depth > 0;
        ir::IRVisitor::visit(op);
    }
};

TEST(ParallelPartition, GuardsFixedPerIterationMoveToTheTopOfTheRest) {
    // A 1x1 conv to 3 channel blocks of 8 in tiles of 2 blocks by 5 of the 9 columns: the
    // parallel loop fuses the column tiles, the block tiles and the 17 rows, so whether an
    // iteration's tile is partial is not monotone in the fused index and no prefix takes the
    // guards off. The rest's iterations branch at their top on each tile's guard, into copies
    // whose loops test nothing (they tested the block guard at every reduction step).
    const te::Tensor x = te::placeholder({1, 5, 17, 9, 8}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({3, 5, 1, 1, 8, 8}, ir::DataType::f32(), "w");
    const te::Compute c =
        te::make_compute({x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 0, 1, 1))});
    sched::DefaultScheduleOptions o;
    o.num_cores = 2;
    o.vector_lanes = 8;
    const State s = sched::default_schedule(c, o);
    const ir::LoweredFunc f = sched::lower_state(s, "pointwise");
    const ir::For* par = f.body.as<ir::For>();
    ASSERT_TRUE(par != nullptr && par->kind == ir::ForKind::Parallel) << ir::to_string(f);
    const auto* branch = par->body.as<ir::IfThenElse>();
    ASSERT_TRUE(branch != nullptr && branch->else_case.defined()) << ir::to_string(f);
    GuardsInLoops main, rest;
    main.visit(branch->then_case);
    rest.visit(branch->else_case);
    EXPECT_EQ(main.guards, 0) << ir::to_string(f);
    EXPECT_EQ(rest.guards, 0) << ir::to_string(f);
    // Both the columns' and the blocks' guards: four copies of the tile.
    EXPECT_EQ(count_loops(f).ifs, 1 + 3) << ir::to_string(f);
    expect_state_matches(s, 19);
}

} // namespace
} // namespace tessera::testing
