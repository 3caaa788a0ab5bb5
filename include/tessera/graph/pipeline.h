// The straight-line graph optimization pipeline: a fixed order of passes (passes.h) selected
// by an optimization level, with per-pass printing, timing and disabling for debugging.
//
// Order: shape-inference, constant-folding, dce, horizontal-fusion, dce, then sweeps of
// algebraic-simplification, cse, dce; then padding-taps, dce, horizontal-conv-fusion, dce,
// layout and winograd.
// Levels: O0 runs shape-inference only (plus constant-folding and dce when the graph has a
// node whose op has no kernel: such an op runs only folded, tasks.h op_has_kernel); O1 adds
// constant-folding and dce; O2 adds horizontal-fusion (when PipelineOptions asks), one sweep
// of algebraic-simplification and cse, padding-taps, and horizontal-conv-fusion (when asked);
// O3 repeats the sweep (constant-folding and dce first from the second on) until one changes
// nothing, at most kMaxO3Sweeps times, then runs layout (NCHW[x]c for CPU convolutions) and
// winograd. With bf16 or fp16 precision, the precision pass runs last, at every level.
// Fusion (fusion.h) runs on the result.
#pragma once

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tessera/graph/passes.h"

namespace tessera::graph {

constexpr int kMaxO3Sweeps = 4;

struct PipelineOptions {
    int level = 2; ///< 0 to 3
    /// Print the graph after this pass ("all": after every pass; empty: never).
    std::string print_after;
    /// Report each pass's wall time in its log line (PassResult::seconds is always filled).
    bool time_passes = false;
    /// Pass names to skip (as in PassResult::pass).
    std::set<std::string> disabled_passes;
    /// Where print_after and time_passes write; nullptr: std::cerr.
    std::ostream* out = nullptr;
    /// The x of NCHW[x]c in the layout pass (-O3). A fixed default, not the host's vector
    /// width, so that results do not depend on the machine; 16 suits AVX-512.
    int64_t layout_block = kDefaultLayoutBlock;
    /// The winograd pass (-O3, after layout).
    WinogradOptions winograd;
    /// Runs horizontal-fusion and horizontal-conv-fusion (-O2 and up). Off by default: neither
    /// measured faster on the CPUs tried. Merging attention's projections (a 4-layer BERT and
    /// synthetic Q/K/V blocks of 8 to 128 tokens, 1 and 2 threads) was 0-3% slower, because
    /// the merged MatMul's epilogue no longer fuses with the branches' elementwise consumers;
    /// merging Inception's 1x1 convs (googlenet, inception_v3, AMD EPYC znver4, 1 and 2
    /// threads) ran within 1% of the unmerged model: each 1x1 conv was already as efficient
    /// alone, its input in cache for the next.
    bool horizontal_fusion = false;
    /// BF16 and FP16 run the precision pass (convert_precision_bf16 / convert_precision_fp16)
    /// last, at every level.
    Precision precision = Precision::FP32;
    /// FP16: the fewest bytes (in f32) of a weight stored in f16 (convert_precision_fp16's
    /// min_bytes); build and tune set the target's L2 cache size.
    int64_t fp16_min_weight_bytes = int64_t{1} << 20;
};

/// The names of all pipeline passes, in pipeline order (each once).
std::vector<std::string> pipeline_pass_names();

/// Throws UserError for a level outside 0..3, a layout block < 1 or an unknown name in
/// print_after or disabled_passes (what optimize checks first; drivers check before a long
/// import).
void check_pipeline_options(const PipelineOptions& options);

/// Runs the pipeline on g. Returns one PassResult per pass run, in order. Throws UserError for
/// a level outside 0..3 or an unknown name in print_after or disabled_passes. Post: g verifies
/// and is shape-inferred; dead nodes are removed (unless dce is disabled).
std::vector<PassResult> optimize(Graph& g, const PipelineOptions& options = {});

/// One line per pass: "constant-folding: 12 changes, 244 -> 232 nodes: folded ..." (with the
/// time when `with_time`).
void print_pass_log(std::ostream& os, const std::vector<PassResult>& log, bool with_time = false);

} // namespace tessera::graph
