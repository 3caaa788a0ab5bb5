// Test helpers: tuning records from sampled schedules (tuning_records.h).
#include "tuning_records.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "tessera/backends/host.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/rng.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::testing {

tune::TuneTarget host_key() {
    const tune::HardwareFingerprint& fp = tune::host_fingerprint();
    return {"llvm -mcpu=" + backend::host_info().cpu_name, fp.hash(), fp.isa_class()};
}

std::string sampled_schedule(const graph::Task& task, uint64_t seed) {
    const te::Compute& c = task.compute.compute;
    sched::SketchOptions so;
    so.num_cores = 2;
    so.weight_inputs = c.weight_inputs;
    const std::vector<sched::State> sketches = sched::generate_sketches(c, so);
    Rng rng(seed);
    sched::SampleOptions sample;
    sample.num_cores = 2;
    sample.max_vectorize_lanes = std::max(4, backend::host_info().vector_bits / 32);
    for (int attempt = 0; attempt < 100 && !sketches.empty(); ++attempt) {
        // The first sketch first: multi-level tiling with packed weights where the task has any.
        const sched::State& sk = sketches[static_cast<size_t>(attempt) % sketches.size()];
        try {
            return sched::steps_to_json(sched::sample_initial_state(sk, rng, sample).steps);
        } catch (const ScheduleError&) {
        }
    }
    ADD_FAILURE() << "no sampled schedule of " << task.pattern << " replays";
    return "";
}

int64_t commit_record(tune::TuningDatabase& db, const graph::Task& task, const std::string& json,
                      const tune::TuneTarget& key, double secs) {
    db.add_workload(task.compute.compute);
    std::vector<tune::TuningRecord> recs(1);
    recs[0].workload_key = task.workload_key;
    recs[0].target = key.target;
    recs[0].fingerprint = key.fingerprint;
    recs[0].isa_class = key.isa_class;
    recs[0].schedule_json = json;
    recs[0].run_secs = {secs, secs * 1.01, secs * 0.99};
    db.commit_batch(recs);
    return recs[0].id;
}

void write_full_database(const std::string& path, const compile::ModelBuild& b, uint64_t seed) {
    tune::TuningDatabase db(path);
    const tune::TuneTarget key = host_key();
    for (size_t t = 0; t < b.tasks.size(); ++t) {
        const graph::Task& task = b.tasks[t].task;
        const double secs = std::max(1e-6, static_cast<double>(task.flops) / 1e10);
        commit_record(db, task, sampled_schedule(task, seed + t), key, secs);
    }
}

} // namespace tessera::testing
