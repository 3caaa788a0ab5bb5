// Writes the seed corpora of the fuzz targets (fuzz/*_fuzzer.cpp) into OUT/<target>/, from
// real artifacts so that the fuzzers start from inputs that pass every check:
//   plan_loader/    the serialized plans of the small shared models (mlp, small_cnn,
//                   conv_bn_relu)
//   schedule_json/  sampled schedules of the schedule fuzzer's two workloads, as step-list JSON
//   jsonl_import/   a JSON Lines export of a tuning database holding records of those schedules
// (The ONNX importer's and the .npy reader's seeds are the shared models' own files, copied
// by CMake.) Deterministic: fixed seeds, synthetic times. Usage: fuzz_seeds OUT [MODELS_DIR].
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/compile/model_compiler.h"
#include "tessera/runtime/model_plan.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/record_jsonl.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera;

void write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

/// `n` sampled schedules of `op` that lower, as step lists.
std::vector<std::vector<sched::Step>> sample_schedules(const te::OpInstance& op, int n,
                                                       uint64_t seed) {
    sched::SketchOptions so;
    so.weight_inputs = op.weight_inputs;
    const std::vector<sched::State> sketches = sched::generate_sketches(op.compute, so);
    Rng rng(seed);
    std::vector<std::vector<sched::Step>> out;
    for (int attempt = 0; static_cast<int>(out.size()) < n && attempt < 50 * n; ++attempt) {
        const sched::State& sketch =
            sketches[static_cast<size_t>(rng.uniform_int(0, int64_t(sketches.size()) - 1))];
        try {
            sched::State s = sched::sample_initial_state(sketch, rng);
            sched::lower_state(s, "seed");
            out.push_back(s.steps);
        } catch (const ScheduleError&) {
        }
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::cerr << "usage: fuzz_seeds OUT [MODELS_DIR]\n";
        return 1;
    }
    const fs::path out = argv[1];
    const fs::path models = argc == 3 ? fs::path(argv[2]) : fs::path();
    try {
        int plans = 0;
        for (const char* name : {"mlp", "small_cnn", "conv_bn_relu"}) {
            const fs::path onnx = models / name / "model.onnx";
            if (models.empty() || !fs::exists(onnx))
                continue;
            compile::BuildOptions opts;
            opts.model_path = onnx.string();
            const compile::ModelBuild b = compile::prepare_model_build(opts);
            std::vector<uint8_t> weights;
            write(out / "plan_loader" / (std::string(name) + ".bin"),
                  runtime::serialize_plan(compile::make_model_plan(b, weights)));
            ++plans;
        }
        if (plans == 0) // no shared models: one small plan of a single copy still seeds
            write(out / "plan_loader" / "empty.bin", runtime::serialize_plan(runtime::ModelPlan{}));

        tune::TuningDatabase db(":memory:");
        std::vector<tune::TuningRecord> records;
        int k = 0;
        for (const char* spec :
             {"matmul:m=7,n=13,k=29", "conv2d:n=1,c=5,h=9,w=11,k=6,r=3,s=3,stride=1,pad=1"}) {
            const te::OpInstance op = te::make_op(spec);
            const std::string key = db.add_workload(op.compute);
            for (const std::vector<sched::Step>& steps : sample_schedules(op, 6, 1 + k)) {
                const std::string json = sched::steps_to_json(steps);
                write(out / "schedule_json" / ("s" + std::to_string(k) + ".json"), json);
                tune::TuningRecord r;
                r.workload_key = key;
                r.target = "llvm -mcpu=seed";
                r.fingerprint = "00000000seedf00d";
                r.isa_class = "x86_64;avx2";
                r.schedule_json = json;
                r.run_secs = {1e-5 * (k + 1), 1.1e-5 * (k + 1)};
                r.measure_settings_json = std::string("{\"op_spec\":\"") + spec + "\"}";
                r.created_at = "2026-01-01T00:00:00Z";
                records.push_back(std::move(r));
                ++k;
            }
        }
        db.commit_batch(records);
        std::ostringstream jsonl;
        tune::export_jsonl(db, {}, jsonl);
        write(out / "jsonl_import" / "records.jsonl", jsonl.str());
        std::cout << "fuzz_seeds: " << plans << " plans, " << k << " schedules and records in "
                  << out.string() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
