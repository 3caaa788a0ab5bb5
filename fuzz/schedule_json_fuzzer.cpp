// Fuzz target of the schedule step-list JSON (schedule/step.h): the text every tuning record
// stores and `op run --schedule` reads. Any byte string must parse or fail with a UserError;
// a step list that parses must write back to text that parses to the same steps, and replaying
// it on a workload must succeed or fail with a ScheduleError (a schedule error the tuner counts
// and skips), never crash or trip an internal check; a replay that succeeds must lower.
//
// Workloads: a matrix product and a 2-D convolution with odd sizes. Seeds: sampled and default
// schedules of both (fuzz_seeds). Driver: libFuzzer or standalone_driver.cpp
// (CMakeLists.txt, scripts/fuzz_all.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tessera;
    static const std::vector<te::OpInstance> ops = {
        te::make_op("matmul:m=7,n=13,k=29"),
        te::make_op("conv2d:n=1,c=5,h=9,w=11,k=6,r=3,s=3,stride=1,pad=1")};
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::vector<sched::Step> steps;
    try {
        steps = sched::steps_from_json(text);
    } catch (const UserError&) {
        return 0; // not a step list
    }
    const std::string written = sched::steps_to_json(steps);
    TESSERA_CHECK(sched::steps_to_json(sched::steps_from_json(written)) == written)
        << "a parsed step list does not round-trip";
    for (const te::OpInstance& op : ops) {
        sched::State s;
        try {
            s = sched::replay(op.compute, steps);
        } catch (const ScheduleError&) {
            continue; // a schedule of another workload, or a broken one
        }
        try {
            sched::lower_state(s, "fuzz_kernel");
        } catch (const ScheduleError&) {
            // Some step combinations only fail at lowering: still a counted schedule error.
        }
    }
    return 0;
}
