// Helpers of the sketch, annotation and mutation fuzz tests: the canonical workloads, and a
// batched numeric check of many schedules through one LLVM JIT module (compiling them
// together costs a fraction of one module each).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/test_util.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/equality.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/lower_default.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/te/op_library.h"

namespace tessera::testing {

struct Workload {
    std::string name;
    te::Compute compute;
};

/// A single-op compute from the spec registry.
inline te::Compute spec_compute(const std::string& spec) { return te::make_op(spec).compute; }

/// x[13, 127] -> sigmoid(relu(x + b) * y) - x, four elementwise stages.
inline te::Compute elementwise_chain() {
    te::Tensor x = te::placeholder({13, 127}, ir::DataType::f32(), "x");
    te::Tensor b = te::placeholder({127}, ir::DataType::f32(), "b");
    te::Tensor y = te::placeholder({13, 127}, ir::DataType::f32(), "y");
    te::Tensor t = te::multiply(te::relu(te::add(x, b)), y);
    return te::make_compute({x, b, y}, {te::subtract(te::sigmoid(t), x)});
}

/// The canonical workloads of the fuzz tests: small, with odd extents.
inline std::vector<Workload> canonical_workloads() {
    std::vector<Workload> w;
    auto op = [&](const std::string& name, const std::string& spec) {
        w.push_back({name, te::make_op(spec).compute});
    };
    op("matmul", "matmul:m=13,n=7,k=127");
    op("batch_matmul", "batch_matmul:b=3,m=7,n=13,k=9");
    op("dense_bias_relu", "dense:m=7,n=13,k=33,bias=1,relu=1");
    op("conv2d_3x3", "conv2d:n=1,c=3,h=13,w=7,k=4,r=3,pad=1");
    op("conv2d_1x1", "conv2d:n=1,c=8,h=7,w=7,k=13,r=1");
    op("conv2d_7x7_s2", "conv2d:n=1,c=3,h=15,w=13,k=4,r=7,stride=2,pad=3");
    op("depthwise_3x3", "depthwise_conv2d:n=1,c=5,h=13,w=7,r=3,pad=1");
    op("conv_bias_relu", "conv2d:n=1,c=3,h=7,w=13,k=5,r=3,pad=1,bias=1,relu=1");
    op("softmax", "softmax:m=7,n=127");
    op("layer_norm", "layer_norm:m=5,n=127");
    op("max_pool", "max_pool2d:n=1,c=3,h=13,w=13,kernel=3,stride=2,pad=1");
    w.push_back({"elementwise_chain", elementwise_chain()});
    return w;
}

/// gtest prints a workload by its name.
inline void PrintTo(const Workload& w, std::ostream* os) { *os << w.name; }

inline std::string workload_name(const ::testing::TestParamInfo<Workload>& info) {
    return info.param.name;
}

/// The options the fuzz tests sample with (fixed, not the host's).
inline sched::SketchOptions fuzz_sketch_options() {
    sched::SketchOptions o;
    o.num_cores = 4;
    return o;
}

/// Inputs packed as the state's input stages store them.
inline std::vector<std::vector<float>> packed_inputs(const sched::State& s,
                                                     const std::vector<std::vector<float>>& in) {
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < s.compute.inputs.size(); ++i) {
        const sched::Stage& st = s.stages[s.stage_id_of(s.compute.inputs[i])];
        out.push_back(st.layout.is_identity()
                          ? in[i]
                          : sched::pack_layout(st.layout, st.tensor.shape(), in[i]));
    }
    return out;
}

/// The reference of a workload: random inputs and the outputs of lower_default through the
/// interpreter.
struct Reference {
    std::vector<std::vector<float>> inputs, outputs;
    explicit Reference(const te::Compute& c, uint64_t seed = 11)
        : inputs(random_inputs(c, seed)), outputs(run_compute(c, inputs)) {}
};

/// How check_numerics runs the schedules. At these sizes the interpreter is far cheaper than
/// compiling (a JIT compile costs ~0.1 s, an interpreted run ~1 ms), so every schedule is
/// interpreted after prepare_for_codegen (which checks the vectorize and unroll passes too, and
/// the interpreter faults on any out-of-bounds access), and a subset is compiled by the LLVM
/// JIT, all of it in one module.
struct NumericsOptions {
    int jit_every = 8;           ///< Every n-th schedule runs through the JIT too (0: none).
    int raw_interpret_every = 4; ///< Every n-th also runs before prepare_for_codegen (0: none).
    double tol = 1e-4;
    int jit_opt_level = 1; ///< The IR pipeline of the JIT (code generation is the same).
};

/// Checks schedules (already lowered) against the reference. Failures name the schedule's
/// steps. Returns how many ran through the JIT.
inline int check_numerics(const std::vector<sched::State>& states,
                          const std::vector<ir::LoweredFunc>& funcs, const Reference& ref,
                          const NumericsOptions& opts = {}) {
    EXPECT_EQ(states.size(), funcs.size());
    auto compare = [&](const std::vector<std::vector<float>>& got, const char* how) {
        EXPECT_EQ(got.size(), ref.outputs.size());
        for (size_t o = 0; o < got.size() && o < ref.outputs.size(); ++o)
            EXPECT_LE(max_rel_error(got[o], ref.outputs[o]), opts.tol)
                << "output " << o << " through the " << how;
    };
    std::vector<ir::LoweredFunc> batch;
    std::vector<size_t> batch_ids;
    for (size_t i = 0; i < funcs.size() && i < states.size(); ++i) {
        SCOPED_TRACE(sched::steps_to_json(states[i].steps));
        const auto inputs = packed_inputs(states[i], ref.inputs);
        ir::LoweredFunc prepared;
        try {
            prepared = lower::prepare_for_codegen(funcs[i]);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "prepare_for_codegen: " << e.what();
            continue;
        }
        compare(run_lowered(prepared, inputs), "interpreter (prepared for codegen)");
        if (opts.raw_interpret_every > 0 && i % static_cast<size_t>(opts.raw_interpret_every) == 0)
            compare(run_lowered(funcs[i], inputs), "interpreter");
        if (opts.jit_every > 0 && i % static_cast<size_t>(opts.jit_every) == 0) {
            prepared.name = "k" + std::to_string(batch.size());
            batch.push_back(prepared);
            batch_ids.push_back(i);
        }
    }
    if (batch.empty())
        return 0;
    backend::CompileOptions copts;
    copts.opt_level = opts.jit_opt_level;
    auto jit = backend::JitModule::compile(batch, copts);
    for (size_t b = 0; b < batch.size(); ++b) {
        const size_t i = batch_ids[b];
        SCOPED_TRACE(sched::steps_to_json(states[i].steps));
        auto kernel = jit->get(batch[b].name);
        Executor exec = [&](const ir::LoweredFunc&, std::vector<void*>& args) {
            kernel(args.data());
        };
        compare(run_lowered(batch[b], packed_inputs(states[i], ref.inputs), exec), "llvm-jit");
    }
    return static_cast<int>(batch.size());
}

/// The JSON round trip of s's steps replays to a state that lowers to the same IR as `f`.
inline void expect_round_trip(const sched::State& s, const ir::LoweredFunc& f) {
    const std::string json = sched::steps_to_json(s.steps);
    sched::State r = sched::replay(s.compute, sched::steps_from_json(json));
    EXPECT_TRUE(ir::structural_equal(sched::lower_state(r, f.name), f)) << json;
    EXPECT_EQ(sched::steps_to_json(r.steps), json);
}

/// s lowers (ScheduleError fails the test), and its JSON round trip replays to equal IR.
inline void expect_state_round_trips_and_lowers(const sched::State& s) {
    try {
        expect_round_trip(s, sched::lower_state(s, "kernel"));
    } catch (const ScheduleError& e) {
        ADD_FAILURE() << "lower_state: " << e.what() << "\n" << sched::steps_to_json(s.steps);
    }
}

} // namespace tessera::testing
