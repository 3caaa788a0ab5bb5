// The straight-line pipeline driver.
#include "tessera/graph/pipeline.h"
#include "tessera/graph/tasks.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>

#include "tessera/support/error.h"

namespace tessera::graph {

namespace {

using PassFn = std::function<PassResult(Graph&)>;

struct PassEntry {
    const char* name;
    PassFn fn;
};

// The passes with their options bound.
std::vector<PassEntry> all_passes(const PipelineOptions& options = {}) {
    const int64_t block = options.layout_block;
    WinogradOptions winograd = options.winograd;
    // In bf16 builds a conv of 128 channels or more takes F(2x2), whose batched product the
    // precision pass makes bf16; one of 64 to 127 stays F(4x4) in f32, which is faster than
    // its direct bf16 conv (resnet18's 56x56 ones on a Zen 4 core: 0.84 against 1.07 ms) and
    // rounds less; narrower ones stay direct bf16 convs. F(2x2) in bf16 on 64 channels put one
    // of resnet18's logits 0.025 from f32's (direct bf16 0.018; bf16 asks 2e-2).
    if (options.precision == Precision::BF16) {
        winograd.min_channels = std::max<int64_t>(winograd.min_channels, 128);
        winograd.max_channels_f4 = std::min<int64_t>(winograd.max_channels_f4, 127);
    }
    return {
        {"shape-inference", shape_inference_pass},
        {"empty-tensors", drop_empty_tensors},
        {"quantized-ops", fold_quantized_ops},
        {"constant-folding", fold_constants},
        {"dce", eliminate_dead_code},
        {"algebraic-simplification", simplify_algebra},
        {"cse", eliminate_common_subexpressions},
        {"horizontal-fusion", fuse_horizontally},
        {"padding-taps", drop_padding_taps},
        // At -O3 the slices keep to the layout's channel blocks.
        {"horizontal-conv-fusion",
         [block, level = options.level](Graph& g) {
             return fuse_convs_horizontally(g, level >= 3 ? block : 1);
         }},
        {"precision", options.precision == Precision::FP16
                          ? PassFn([min = options.fp16_min_weight_bytes](Graph& g) {
                                return convert_precision_fp16(g, min);
                            })
                          : PassFn(convert_precision_bf16)},
        {"layout", [block](Graph& g) { return convert_layout_nchwc(g, block); }},
        {"winograd", [winograd](Graph& g) { return convert_conv_winograd(g, winograd); }},
    };
}

PassFn find_pass(const std::string& name, const PipelineOptions& options = {}) {
    for (const PassEntry& e : all_passes(options))
        if (name == e.name)
            return e.fn;
    return nullptr;
}

} // namespace

std::vector<std::string> pipeline_pass_names() {
    std::vector<std::string> names;
    for (const PassEntry& e : all_passes())
        names.push_back(e.name);
    return names;
}

void check_pipeline_options(const PipelineOptions& options) {
    if (options.level < 0 || options.level > 3)
        throw UserError() << "optimization level " << options.level << " is not in 0..3";
    if (options.layout_block < 1)
        throw UserError() << "layout block " << options.layout_block << " must be positive";
    if (!options.print_after.empty() && options.print_after != "all" &&
        !find_pass(options.print_after))
        throw UserError() << "unknown pass '" << options.print_after << "' in print-after";
    for (const std::string& name : options.disabled_passes)
        if (!find_pass(name))
            throw UserError() << "unknown pass '" << name << "' to disable";
}

std::vector<PassResult> optimize(Graph& g, const PipelineOptions& options) {
    check_pipeline_options(options);
    std::ostream& out = options.out ? *options.out : std::cerr;

    std::vector<PassResult> log;
    auto run = [&](const char* name) {
        if (options.disabled_passes.count(name))
            return 0;
        const auto t0 = std::chrono::steady_clock::now();
        PassResult r = find_pass(name, options)(g);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (options.time_passes)
            out << "time " << std::fixed << std::setprecision(6) << r.seconds << " s  " << name
                << "\n";
        if (options.print_after == "all" || options.print_after == name) {
            out << "// after " << name << " (" << r.summary << ")\n";
            print(out, g);
        }
        log.push_back(r);
        return r.changes;
    };

    run("shape-inference");
    // Zero extents never reach a kernel, at every level.
    if (has_empty_values(g))
        run("empty-tensors");
    // An op without a kernel runs only folded into a constant, at every level.
    bool kernelless = false;
    for (NodeId id : g.topological_order())
        kernelless = kernelless || !op_has_kernel(g.node(id).op);
    if (options.level >= 1)
        run("quantized-ops");
    if (options.level >= 1 || kernelless) {
        run("constant-folding");
        run("dce");
    }
    if (options.level >= 2 && options.horizontal_fusion && run("horizontal-fusion") > 0)
        run("dce");
    const int sweeps = options.level >= 3 ? kMaxO3Sweeps : options.level == 2 ? 1 : 0;
    for (int sweep = 0; sweep < sweeps; ++sweep) {
        int changes = 0;
        if (sweep > 0) {
            changes += run("constant-folding");
            changes += run("dce");
        }
        changes += run("algebraic-simplification");
        changes += run("cse");
        changes += run("dce");
        if (changes == 0)
            break;
    }
    // After simplification has folded batch norms into the convs; before horizontal conv
    // fusion, which merges the 1x1 convs some atrous convs become with their neighbours.
    if (options.level >= 2 && run("padding-taps") > 0)
        run("dce");
    // After simplification has folded each branch's batch norm into its conv, before layout.
    if (options.level >= 2 && options.horizontal_fusion && run("horizontal-conv-fusion") > 0)
        run("dce");
    // Requested by the user, so at every level; after simplification has shaped the products,
    // the layout pass has blocked the convs and Winograd has rewritten those it takes (their
    // batched products then run in bf16, the transforms in f32).
    if (options.level >= 3) {
        run("layout");
        run("winograd");
    }
    // Then dead-code elimination: a product that no longer reads a Transpose (it takes the
    // Transpose's input, permuted otherwise) leaves it dead, and a dead reader would end the
    // fused group of the value it read.
    if ((options.precision == Precision::BF16 || options.precision == Precision::FP16) &&
        run("precision") > 0)
        run("dce");
    g.verify();
    return log;
}

void print_pass_log(std::ostream& os, const std::vector<PassResult>& log, bool with_time) {
    for (const PassResult& r : log) {
        os << r.pass << ": " << r.changes << " changes, " << r.nodes_before << " -> "
           << r.nodes_after << " nodes: " << r.summary;
        if (with_time)
            os << " (" << std::fixed << std::setprecision(3) << r.seconds * 1e3 << " ms)";
        os << "\n";
    }
}

} // namespace tessera::graph
