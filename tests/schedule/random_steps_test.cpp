// Random step sequences: every step either applies or throws ScheduleError (never another
// exception), and every state reached lowers to IR that verifies and computes what the
// default lowering computes.
#include "schedule_test_util.h"
#include "tessera/ir/equality.h"
#include "tessera/support/rng.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;
using sched::Step;
using sched::StepKind;

/// A random step over s, mostly with ids in range (so that it often applies).
Step random_step(const State& s, Rng& rng) {
    Step st;
    st.kind = static_cast<StepKind>(rng.uniform_int(0, int(StepKind::TransformLayout)));
    const int nstages = static_cast<int>(s.stages.size());
    st.stage = static_cast<int>(rng.uniform_int(-1, nstages));
    if (rng.uniform01() < 0.9)
        st.stage = static_cast<int>(rng.uniform_int(0, nstages - 1));
    const int niters =
        st.stage >= 0 && st.stage < nstages ? static_cast<int>(s.stages[st.stage].iters.size()) : 3;
    auto any_iter = [&] { return static_cast<int>(rng.uniform_int(-1, std::max(niters, 1))); };
    auto good_iter = [&] {
        return niters > 0 ? static_cast<int>(rng.uniform_int(0, niters - 1)) : any_iter();
    };
    st.iter = rng.uniform01() < 0.9 ? good_iter() : any_iter();
    const int nlen = static_cast<int>(rng.uniform_int(0, 3));
    for (int k = 0; k < nlen; ++k)
        st.lengths.push_back(rng.uniform01() < 0.95 ? rng.uniform_int(1, 9)
                                                    : rng.uniform_int(-1, 0));
    st.inner_to_outer = rng.uniform01() < 0.8;
    st.annotation = static_cast<IterAnnotation>(rng.uniform_int(0, int(IterAnnotation::ThreadZ)));
    st.pragma = rng.uniform01() < 0.9 ? "auto_unroll_max_step" : "bogus";
    st.value = rng.uniform_int(-1, 64);
    st.src_step = static_cast<int>(rng.uniform_int(-1, static_cast<int64_t>(s.steps.size())));
    st.n_split = static_cast<int>(rng.uniform_int(0, 3));
    st.target_stage = static_cast<int>(rng.uniform_int(0, nstages - 1));
    const int tn = static_cast<int>(s.stages[st.target_stage].iters.size());
    st.target_iter = static_cast<int>(rng.uniform_int(0, std::max(tn, 1) - 1));
    const char* scopes[] = {"local", "global", "shared", "bad"};
    st.scope = scopes[rng.uniform_int(0, 3)];
    switch (st.kind) {
    case StepKind::Fuse: {
        const int a = good_iter();
        const int n = static_cast<int>(rng.uniform_int(1, 3));
        for (int k = 0; k < n; ++k)
            st.iters.push_back(a + k);
        break;
    }
    case StepKind::Reorder: {
        for (int k = 0; k < niters; ++k)
            st.iters.push_back(k);
        for (int k = niters - 1; k > 0; --k)
            std::swap(st.iters[k], st.iters[rng.uniform_int(0, k)]);
        if (rng.uniform01() < 0.1 && !st.iters.empty())
            st.iters.back() = 0;
        break;
    }
    case StepKind::CacheRead: {
        if (st.stage >= 0 && st.stage < nstages) {
            auto cons = s.consumers(st.stage);
            if (!cons.empty())
                st.readers = {cons[rng.uniform_int(0, static_cast<int64_t>(cons.size()) - 1)]};
        }
        break;
    }
    case StepKind::TransformLayout: {
        if (st.stage >= 0 && st.stage < nstages) {
            const size_t rank = s.stages[st.stage].tensor.ndim();
            st.lengths.assign(rank, 1);
            st.lengths[rng.uniform_int(0, std::max<int64_t>(rank, 1) - 1) %
                       std::max<size_t>(rank, 1)] = rng.uniform_int(1, 5);
            st.iters.clear();
        }
        break;
    }
    case StepKind::Split:
    case StepKind::FollowSplit:
    case StepKind::Annotate:
    case StepKind::Pragma:
    case StepKind::ComputeAt:
    case StepKind::ComputeInline:
    case StepKind::ComputeRoot:
    case StepKind::CacheWrite:
    case StepKind::Rfactor:
        break;
    }
    return st;
}

TEST(RandomSteps, ApplyOrScheduleErrorAndAlwaysCorrect) {
    const char* specs[] = {"matmul:m=7,n=13,k=5",
                           "conv2d:n=1,c=2,h=6,w=5,k=3,r=3,pad=1,relu=1",
                           "softmax:m=3,n=7",
                           "reduce_sum:m=5,n=11",
                           "relu:m=13,n=1",
                           "dense:m=3,n=5,k=7,bias=1,relu=1",
                           "conv2d:n=1,c=2,h=7,w=6,k=2,r=3,stride=2,pad=2",
                           "avg_pool2d:c=2,h=5,w=7,kernel=3,stride=2,pad=1",
                           "layer_norm:m=3,n=5",
                           "depthwise_conv2d:c=3,h=5,w=5,r=3,pad=1,multiplier=2",
                           "concat:m=3,n=4,parts=3",
                           "batch_matmul:b=2,m=3,n=5,k=4"};
    int applied = 0, rejected = 0, checked = 0;
    for (uint64_t seed = 1; seed <= 72; ++seed) {
        const char* spec = specs[seed % (sizeof(specs) / sizeof(specs[0]))];
        te::Compute c = op_compute(spec);
        Rng rng(seed);
        State s = sched::make_initial_state(c);
        for (int n = 0; n < 24; ++n) {
            Step st = random_step(s, rng);
            try {
                sched::apply_step(s, st);
                ++applied;
            } catch (const ScheduleError&) {
                ++rejected;
            }
        }
        SCOPED_TRACE(std::string(spec) + " seed " + std::to_string(seed) + ": " +
                     sched::steps_to_json(s.steps));
        try {
            expect_state_matches(s, seed, /*interpreter_only=*/seed % 4 != 0);
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what() << "\n" << spec << " " << sched::steps_to_json(s.steps);
            return;
        }
        ++checked;
        // The recorded steps replay to the same IR.
        State r = sched::replay(c, sched::steps_from_json(sched::steps_to_json(s.steps)));
        EXPECT_TRUE(ir::structural_equal(sched::lower_state(s, "k"), sched::lower_state(r, "k")));
    }
    EXPECT_GT(applied, 100);
    EXPECT_GT(rejected, 50);
    EXPECT_EQ(checked, 72);
}

} // namespace
} // namespace tessera::testing
