// `tessera inspect MODEL`: imports an ONNX model, runs the graph pipeline and reports what it
// did: node counts per op before and after, each pass's changes, the fused groups, the tuning
// tasks (one per distinct workload key) and the memory plan of the intermediates.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "model_inputs.h"
#include "tessera/compile/model_pipeline.h"

#include "tessera/graph/passes.h"

namespace tessera::cli {

struct InspectOptions {
    std::string model;                     ///< path of the .onnx file
    ModelInputOptions inputs; ///< --input-shape, --bind, --precision
    int opt_level = compile::kDefaultOptLevel; ///< 0 to 3 (-O0 .. -O3), as build and tune
    std::string print_after;               ///< a pass name or "all"; empty: never
    bool time_passes = false;
    std::vector<std::string> disabled_passes;
    bool horizontal_fusion = false; ///< --horizontal-fusion, as build and tune
    std::string target = "llvm";    ///< --target, as build and tune
    bool json = false; ///< one JSON object instead of text
    int64_t layout_block = 0; ///< x of NCHW[x]c at -O3; 0: graph::layout_block_for(host)
    /// A task (its index in the task list, or a prefix of its workload key): print its default
    /// schedule on this host instead of the report. Empty: the report.
    std::string schedule_task;
};

/// Runs the inspection and writes the report to `out` (graph printouts from print_after go
/// there too, before the report). Throws UserError for an unreadable or unsupported model, a
/// malformed input shape, an opt level outside 0..3, a layout block < 1 or an unknown pass
/// name. A group that has no tensor program yet does not fail the report: the task section
/// then names the op and node instead. With schedule_task, throws UserError when it names no
/// task, or a key prefix names several.
void run_inspect(const InspectOptions& options, std::ostream& out);

} // namespace tessera::cli
