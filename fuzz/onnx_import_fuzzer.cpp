// Fuzz target of the ONNX importer: any byte string must import cleanly or fail with a
// UserError (a one-line message for the user), never crash, hang or trip an internal check.
// A graph that imports is also verified, partitioned into fused groups and memory-planned,
// which exercise the graph structure the importer built.
//
// Built with libFuzzer when the compiler is Clang (scripts/fuzz_import.sh), and otherwise with
// standalone_driver.cpp, which replays a seed corpus under seeded mutations (the ctest entry).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/memory_plan.h"
#include "tessera/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tessera;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        graph::Graph g = graph::import_onnx_bytes(bytes, "fuzz-input");
        g.verify();
        std::vector<graph::FusedGroup> groups = graph::fuse_ops(g);
        graph::MemoryPlan plan = graph::plan_memory(g, groups);
        TESSERA_CHECK(plan.planned_bytes <= plan.naive_bytes) << "memory plan above naive";
    } catch (const UserError&) {
        // Rejected input: the expected outcome for most mutations.
    }
    // InternalError and anything else propagate: the fuzzer reports them as crashes.
    return 0;
}
