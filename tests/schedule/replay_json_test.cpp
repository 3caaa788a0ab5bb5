// Replay is pure and deterministic, and the versioned JSON of every step kind round-trips
// to structurally equal IR; malformed JSON is a UserError naming the reason.
#include "schedule_test_util.h"
#include "tessera/ir/equality.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;
using sched::Step;
using sched::StepKind;

/// A conv + relu schedule that uses every step kind but rfactor.
State full_schedule(const te::Compute& c) {
    State s = sched::make_initial_state(c);
    const int w = s.stage_id_of("w");
    sched::transform_layout(s, w, {{4, 1, 1, 1}, {0, 2, 3, 4, 1}}); // TransformLayout
    const int pad = s.stage_id_of("conv2d_pad");
    int conv = s.stage_id_of("conv2d");
    const int local = sched::cache_write(s, conv, "local"); // CacheWrite
    conv = local + 1;
    const int relu = conv + 1;
    // relu: n, k, oh, ow
    sched::split(s, relu, 1, {4}); // Split
    const int split_step = static_cast<int>(s.steps.size()) - 1;
    sched::follow_split(s, relu, 4, split_step, 1);        // FollowSplit
    sched::reorder(s, relu, {0, 1, 3, 2, 4, 5});           // Reorder
    sched::fuse(s, relu, {0, 1});                          // Fuse
    sched::annotate(s, relu, 0, IterAnnotation::Parallel); // Annotate
    sched::compute_at(s, conv, relu, 2);                   // ComputeAt
    sched::compute_at(s, local, conv, 1);
    sched::compute_inline(s, pad);                                 // ComputeInline
    sched::compute_root(s, pad);                                   // ComputeRoot
    sched::pragma(s, local, 0, "auto_unroll_max_step", 64);        // Pragma
    const int copy = sched::cache_read(s, pad, "global", {local}); // CacheRead
    sched::compute_at(s, copy, local + 1, 1);                      // local moved up by one
    return s;
}

State rfactor_schedule() {
    te::Compute c = op_compute("reduce_sum:m=3,n=37");
    State s = sched::make_initial_state(c);
    sched::split(s, 1, 1, {8});
    sched::rfactor(s, 1, 2); // Rfactor
    return s;
}

TEST(Replay, EveryStepKindRoundTripsThroughJson) {
    te::Compute c = op_compute("conv2d:n=1,c=4,h=9,w=9,k=8,r=3,pad=1,relu=1");
    for (const State& s : {full_schedule(c), rfactor_schedule()}) {
        SCOPED_TRACE(sched::to_string(s));
        expect_state_matches(s);
        const std::string json = sched::steps_to_json(s.steps);
        const std::vector<Step> back = sched::steps_from_json(json);
        ASSERT_EQ(back.size(), s.steps.size());
        for (size_t i = 0; i < back.size(); ++i)
            EXPECT_EQ(back[i], s.steps[i]) << sched::to_string(s.steps[i]);
        EXPECT_EQ(sched::steps_to_json(back), json);
        const State r = sched::replay(s.compute, back);
        EXPECT_TRUE(ir::structural_equal(sched::lower_state(s, "k"), sched::lower_state(r, "k")));
    }
    std::vector<StepKind> kinds;
    for (const State& s : {full_schedule(c), rfactor_schedule()})
        for (const Step& st : s.steps)
            kinds.push_back(st.kind);
    for (int k = 0; k <= static_cast<int>(StepKind::TransformLayout); ++k)
        EXPECT_NE(std::find(kinds.begin(), kinds.end(), static_cast<StepKind>(k)), kinds.end())
            << "no step of kind " << sched::to_string(static_cast<StepKind>(k));
}

TEST(Replay, DeterministicAndPure) {
    te::Compute c = op_compute("conv2d:n=1,c=4,h=9,w=9,k=8,r=3,pad=1,relu=1");
    const State s = full_schedule(c);
    const State a = sched::replay(c, s.steps);
    const State b = sched::replay(c, s.steps);
    const ir::LoweredFunc fa = sched::lower_state(a, "k"), fb = sched::lower_state(b, "k");
    EXPECT_TRUE(ir::structural_equal(fa, fb));
    EXPECT_EQ(ir::structural_hash(fa), ir::structural_hash(fb));
    EXPECT_EQ(sched::to_string(a), sched::to_string(b));
    EXPECT_TRUE(ir::structural_equal(sched::lower_state(s, "k"), fa));
    // Lowering the same state twice gives equal IR too.
    EXPECT_TRUE(ir::structural_equal(sched::lower_state(a, "k"), fa));
}

TEST(Replay, IllegalStepNamesItsIndex) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    Step bad;
    bad.kind = StepKind::Split;
    bad.stage = 2;
    bad.iter = 7;
    bad.lengths = {2};
    Step ok = bad;
    ok.iter = 0;
    try {
        sched::replay(c, {ok, bad});
        FAIL() << "no ScheduleError";
    } catch (const ScheduleError& e) {
        EXPECT_NE(std::string(e.what()).find("step 1"), std::string::npos) << e.what();
    }
}

TEST(StepJson, MalformedInputIsUserError) {
    auto expect_user_error = [](const std::string& text, const std::string& reason) {
        try {
            sched::steps_from_json(text);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(reason), std::string::npos)
                << "message '" << e.what() << "' lacks '" << reason << "'";
        }
    };
    expect_user_error("{", "not valid json");
    expect_user_error("[]", "not an object");
    expect_user_error("{\"steps\": []}", "no 'version'");
    expect_user_error("{\"version\": 2, \"steps\": []}", "version 2");
    expect_user_error("{\"version\": \"1\", \"steps\": []}", "version \"1\"");
    expect_user_error("{\"version\": 1}", "no 'steps'");
    expect_user_error("{\"version\": 1, \"steps\": [3]}", "step 0 is not an object");
    expect_user_error("{\"version\": 1, \"steps\": [{\"kind\": \"tile\"}]}",
                      "unknown step kind 'tile'");
    expect_user_error("{\"version\": 1, \"steps\": [{\"kind\": \"split\", \"stage\": 1}]}",
                      "no field 'iter'");
    expect_user_error(
        "{\"version\": 1, \"steps\": [{\"kind\": \"split\", \"stage\": 1, \"iter\": 0, "
        "\"lengths\": [\"4\"], \"inner_to_outer\": true}]}",
        "non-integer");
    expect_user_error(
        "{\"version\": 1, \"steps\": [{\"kind\": \"annotate\", \"stage\": 1, \"iter\": 0, "
        "\"annotation\": \"simd\"}]}",
        "unknown iterator annotation 'simd'");
    expect_user_error("{\"version\": 1, \"steps\": [{\"kind\": \"compute_root\", \"stage\": 1.5}]}",
                      "not an integer");
    EXPECT_TRUE(sched::steps_from_json("{\"version\": 1, \"steps\": []}").empty());
}

TEST(StepJson, ReadableForm) {
    Step s;
    s.kind = StepKind::Split;
    s.stage = 2;
    s.iter = 0;
    s.lengths = {4, 16};
    EXPECT_EQ(sched::to_string(s), "split(stage=2, iter=0, lengths=[4, 16], inner_to_outer=true)");
    EXPECT_EQ(sched::steps_to_json({s}),
              "{\"version\":1,\"steps\":[{\"kind\":\"split\",\"stage\":2,\"iter\":0,"
              "\"lengths\":[4,16],\"inner_to_outer\":true}]}");
}

} // namespace
} // namespace tessera::testing
