// The per-operator checks of the graph tests (op_case.h).
#include "op_case.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/jit_executor.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/tasks.h"
#include "tessera/lower/lower_default.h"
#include "tessera/runtime/tessera_model.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/te/workload_key.h"

namespace tessera::graph {

namespace {

/// How a group's Compute becomes loop IR.
enum class Lowering {
    Default,         ///< lower::lower_default: the naive loop nest
    DefaultSchedule, ///< sched::default_schedule (weights packed as it asks), as `build` does
};

/// Runs the group's Compute lowered as `how` through the JIT on the evaluator's values of its
/// inputs and compares its outputs with the evaluator's values.
void check_group(const Graph& g, const GroupCompute& gc,
                 const std::vector<std::shared_ptr<const TensorData>>& vals, Lowering how,
                 double atol, const std::string& name) {
    ir::LoweredFunc f;
    // Inputs the schedule stores in a packed layout get packed copies of their data.
    std::vector<std::vector<uint8_t>> packed(gc.inputs.size());
    if (how == Lowering::Default) {
        f = lower::lower_default(gc.compute, name);
    } else {
        sched::DefaultScheduleOptions opts;
        opts.weight_inputs = gc.compute.weight_inputs;
        const sched::State st = sched::default_schedule(gc.compute, opts);
        f = sched::lower_state(st, name);
        for (size_t i = 0; i < gc.inputs.size(); ++i) {
            const sched::Stage& in = st.stages.at(st.stage_id_of(gc.compute.inputs[i]));
            if (in.layout.is_identity())
                continue;
            const TensorData& d = *vals[gc.inputs[i]];
            const size_t es = dtype_size(d.dtype());
            packed[i].resize(te::num_elements(sched::packed_shape(in.layout, d.shape())) * es);
            sched::pack_layout(in.layout, d.shape(), es, d.raw(), packed[i].data());
        }
    }
    std::vector<void*> args;
    for (size_t i = 0; i < gc.inputs.size(); ++i)
        args.push_back(packed[i].empty() ? const_cast<uint8_t*>(vals[gc.inputs[i]]->raw())
                                         : static_cast<void*>(packed[i].data()));
    std::vector<TensorData> outs;
    for (ValueId v : gc.outputs) {
        TensorData t(g.value(v).dtype, g.value(v).shape);
        // A sentinel in every byte: an element never written shows up (NaN, -1, or 255 for a
        // bool).
        std::memset(t.raw(), 0xff, t.nbytes());
        outs.push_back(std::move(t));
    }
    for (TensorData& t : outs)
        args.push_back(t.raw());
    testing::jit_executor()(f, args);
    for (size_t o = 0; o < outs.size(); ++o) {
        const Value& v = g.value(gc.outputs[o]);
        testing::Closeness cl = testing::compare(outs[o], *vals[gc.outputs[o]], 1e-5, atol);
        EXPECT_TRUE(cl.ok) << "output '" << v.name << "' " << dtype_name(v.dtype)
                           << shape_str(v.shape) << ": " << cl.message;
    }
}

} // namespace

std::set<Op> check_case(Case& c, std::vector<ValueId> outputs) {
    const Graph g = c.b.finish(std::move(outputs));
    // The whole graph evaluates (types agree with shape inference) ...
    evaluate(g, c.feeds);
    // ... and so does every value, for the groups' inputs and outputs.
    const auto vals = evaluate_all_values(g, c.feeds);
    std::set<Op> covered;
    const std::vector<FusedGroup> groups = fuse_ops(g);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        const FusedGroup& group = groups[gi];
        SCOPED_TRACE("group " + std::to_string(gi) + " " + group.pattern);
        for (NodeId id : group.nodes)
            covered.insert(g.node(id).op);
        GroupCompute gc;
        try {
            gc = group_compute(g, group);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "no Compute: " << e.what();
            continue;
        }
        EXPECT_EQ(te::workload_key(gc.compute).size(), 64u);
        const std::string name = "op_compute_" + std::to_string(gi);
        for (Lowering how : {Lowering::Default, Lowering::DefaultSchedule}) {
            const char* what = how == Lowering::Default ? "lower_default" : "default_schedule";
            SCOPED_TRACE(what);
            try {
                check_group(g, gc, vals, how, c.atol, name);
            } catch (const std::exception& e) {
                ADD_FAILURE() << what << " failed: " << e.what();
            }
        }
    }
    return covered;
}

namespace {

std::vector<std::vector<OpCase> (*)()>& registry() {
    static std::vector<std::vector<OpCase> (*)()> makers;
    return makers;
}

/// The C API of a model library, looked up with dlsym, each function as the header declares it
/// (a call through another function type is undefined behaviour, which UBSan reports).
struct ModelLibrary {
    void* handle = nullptr;
    decltype(&tessera_model_create) create = nullptr;
    decltype(&tessera_model_free) free_model = nullptr;
    decltype(&tessera_model_run) run = nullptr;
    decltype(&tessera_model_last_error) last_error = nullptr;

    explicit ModelLibrary(const std::string& path) {
        handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            return;
        lookup(create, "tessera_model_create");
        lookup(free_model, "tessera_model_free");
        lookup(run, "tessera_model_run");
        lookup(last_error, "tessera_model_last_error");
    }
    template <typename F> void lookup(F& f, const char* name) {
        f = reinterpret_cast<F>(dlsym(handle, name));
    }
    ~ModelLibrary() {
        if (handle)
            dlclose(handle);
    }
    bool ok() const { return handle && create && free_model && run && last_error; }
};

} // namespace

bool register_op_cases(std::vector<OpCase> (*make)()) {
    registry().push_back(make);
    return true;
}

std::vector<OpCase> all_op_cases() {
    std::vector<OpCase> all;
    for (auto make : registry())
        for (OpCase& c : make())
            all.push_back(std::move(c));
    return all;
}

Graph expect_library_matches_evaluator(const std::string& model_bytes,
                                       const std::vector<TensorData>& feeds, int opt_level,
                                       double rtol, double atol, const ImportOptions& import,
                                       Precision precision) {
    namespace fs = std::filesystem;
    static int serial = 0;
    const fs::path dir =
        fs::temp_directory_path() / ("tessera_op_case_" + std::to_string(getpid()) + "_" +
                                     std::to_string(serial++) + "_O" + std::to_string(opt_level));
    fs::create_directories(dir);
    const std::string model = (dir / "model.onnx").string();
    std::ofstream(model, std::ios::binary) << model_bytes;

    compile::BuildOptions opts;
    opts.model_path = model;
    opts.opt_level = opt_level;
    opts.target.num_cores = 2;
    opts.jobs = 1;
    opts.input_shapes = import.input_shapes;
    opts.bound_inputs = import.bound_inputs;
    opts.precision = precision;
    const compile::ModelBuild build = compile::prepare_model_build(opts);
    const std::string so = (dir / "model.so").string();
    compile::write_model_library(build, so, opts);

    const Graph g = import_onnx(model, import);
    const std::vector<TensorData> want = evaluate(
        precision == Precision::FP32 || precision == Precision::TF32 ? g : build.graph, feeds);

    ModelLibrary lib(so);
    EXPECT_TRUE(lib.ok()) << dlerror();
    TesseraModel* m = nullptr;
    if (!lib.ok() || lib.create(&m) != 0) {
        ADD_FAILURE() << "the library does not load or create: "
                      << (lib.ok() ? lib.last_error() : "");
        return build.graph;
    }
    std::vector<const void*> ins;
    for (const TensorData& t : feeds)
        ins.push_back(t.raw());
    std::vector<TensorData> got;
    std::vector<void*> outs;
    for (const TensorData& w : want) {
        got.emplace_back(w.dtype(), w.shape());
        if (got.back().nbytes() > 0) // an empty output has no storage
            std::memset(got.back().raw(), 0xff, got.back().nbytes());
    }
    for (TensorData& t : got)
        outs.push_back(t.raw());
    EXPECT_EQ(lib.run(m, ins.data(), outs.data()), 0) << lib.last_error();
    lib.free_model(m);
    for (size_t i = 0; i < want.size(); ++i) {
        testing::Closeness cl = testing::compare(got[i], want[i], rtol, atol);
        EXPECT_TRUE(cl.ok) << "output " << i << ": " << cl.message;
    }
    fs::remove_all(dir);
    return build.graph;
}

} // namespace tessera::graph
