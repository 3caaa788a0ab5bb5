// Test helpers for built model libraries (model_library_loader.h).
#include "common/model_library_loader.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/test_util.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/tensor_io.h"

namespace tessera::testing {

namespace fs = std::filesystem;

std::string shared_models_dir() { return std::string(TESSERA_SOURCE_DIR) + "/../shared/models"; }

std::string model_dir(const std::string& name) {
    if (name == "mobilenet_tiny")
        return std::string(TESSERA_SOURCE_DIR) + "/models/mobilenet_tiny";
    return shared_models_dir() + "/" + name;
}

LoadedModel::LoadedModel(const std::string& so_path) {
    handle_ = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_)
        throw std::runtime_error(std::string("dlopen: ") + dlerror());
    if (sym<int (*)()>("tessera_model_abi_version")() != TESSERA_MODEL_ABI_VERSION)
        throw std::runtime_error("ABI version mismatch");
    check(sym<int (*)(TesseraModel**)>("tessera_model_create")(&model_), "create");
}

LoadedModel::~LoadedModel() {
    if (model_)
        sym<void (*)(TesseraModel*)>("tessera_model_free")(model_);
    if (handle_)
        dlclose(handle_);
}

template <typename F> F LoadedModel::sym(const char* name) const {
    void* p = dlsym(handle_, name);
    if (!p)
        throw std::runtime_error(std::string("dlsym ") + name + ": " + dlerror());
    return reinterpret_cast<F>(p);
}

void LoadedModel::check(int rc, const char* what) const {
    if (rc != 0)
        throw std::runtime_error(std::string("tessera_model_") + what + ": " +
                                 sym<const char* (*)()>("tessera_model_last_error")());
}

std::string LoadedModel::name() const {
    return sym<const char* (*)(const TesseraModel*)>("tessera_model_name")(model_);
}

std::vector<TesseraTensorInfo> LoadedModel::inputs() const {
    const int n = sym<int (*)(const TesseraModel*)>("tessera_model_num_inputs")(model_);
    auto info =
        sym<int (*)(const TesseraModel*, int, TesseraTensorInfo*)>("tessera_model_input_info");
    std::vector<TesseraTensorInfo> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        check(info(model_, i, &v[static_cast<size_t>(i)]), "input_info");
    return v;
}

std::vector<TesseraTensorInfo> LoadedModel::outputs() const {
    const int n = sym<int (*)(const TesseraModel*)>("tessera_model_num_outputs")(model_);
    auto info =
        sym<int (*)(const TesseraModel*, int, TesseraTensorInfo*)>("tessera_model_output_info");
    std::vector<TesseraTensorInfo> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        check(info(model_, i, &v[static_cast<size_t>(i)]), "output_info");
    return v;
}

void LoadedModel::set_num_threads(int n) {
    check(sym<int (*)(TesseraModel*, int)>("tessera_model_set_num_threads")(model_, n),
          "set_num_threads");
}

static graph::DType dtype_of_info(int t) {
    if (const std::optional<graph::DType> d = compile::graph_dtype_of(t))
        return *d;
    throw std::runtime_error("unexpected dtype " + std::to_string(t));
}

std::vector<graph::TensorData> LoadedModel::run(const std::vector<graph::TensorData>& inputs) {
    const std::vector<TesseraTensorInfo> in_info = this->inputs();
    if (in_info.size() != inputs.size())
        throw std::runtime_error("wrong number of inputs");
    std::vector<const void*> in_ptrs;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const graph::Shape shape(in_info[i].shape, in_info[i].shape + in_info[i].rank);
        if (inputs[i].shape() != shape || inputs[i].dtype() != dtype_of_info(in_info[i].dtype))
            throw std::runtime_error("input " + std::to_string(i) + " has the wrong type");
        in_ptrs.push_back(inputs[i].raw());
    }
    std::vector<graph::TensorData> outs;
    for (const TesseraTensorInfo& o : this->outputs())
        outs.emplace_back(dtype_of_info(o.dtype), graph::Shape(o.shape, o.shape + o.rank));
    std::vector<void*> out_ptrs;
    for (auto& t : outs)
        out_ptrs.push_back(t.raw());
    check(sym<int (*)(TesseraModel*, const void* const*, void* const*)>("tessera_model_run")(
              model_, in_ptrs.data(), out_ptrs.data()),
          "run");
    return outs;
}

void LoadedModel::run_raw(const void* const* inputs, void* const* outputs) {
    check(sym<int (*)(TesseraModel*, const void* const*, void* const*)>("tessera_model_run")(
              model_, inputs, outputs),
          "run");
}

std::vector<graph::TensorData> read_data_set(const std::string& model_dir, int set,
                                             const std::string& kind) {
    std::vector<graph::TensorData> v;
    const std::string dir = model_dir + "/test_data_set_" + std::to_string(set) + "/";
    for (int i = 0;; ++i) {
        const std::string stem = dir + kind + "_" + std::to_string(i);
        if (fs::exists(stem + ".npy"))
            v.push_back(graph::read_npy(stem + ".npy"));
        else if (fs::exists(stem + ".pb"))
            v.push_back(graph::read_tensor_pb(stem + ".pb"));
        else
            break;
    }
    return v;
}

::testing::AssertionResult outputs_match(const std::vector<graph::TensorData>& got,
                                         const std::vector<graph::TensorData>& ref, double rtol,
                                         double atol) {
    if (got.size() != ref.size())
        return ::testing::AssertionFailure()
               << got.size() << " outputs, the reference has " << ref.size();
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i].dtype() != ref[i].dtype() || got[i].shape() != ref[i].shape())
            return ::testing::AssertionFailure()
                   << "output " << i << " is " << graph::dtype_name(got[i].dtype())
                   << graph::shape_str(got[i].shape()) << ", the reference "
                   << graph::dtype_name(ref[i].dtype()) << graph::shape_str(ref[i].shape());
        const std::vector<double> g = got[i].as_f64(), r = ref[i].as_f64();
        int bad = 0;
        size_t first = 0;
        double worst = 0;
        for (size_t k = 0; k < g.size(); ++k) {
            const double err = std::fabs(g[k] - r[k]);
            const double tol = atol + rtol * std::fabs(r[k]);
            if (!(err <= tol)) {
                if (bad++ == 0)
                    first = k;
            }
            worst = std::max(worst, err / tol);
        }
        if (bad > 0)
            return ::testing::AssertionFailure()
                   << "output " << i << ": " << bad << " of " << g.size()
                   << " elements out of tolerance, first at " << first << " (got " << g[first]
                   << ", want " << r[first] << "), worst |err|/tol " << worst;
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult library_matches_evaluator(const std::string& so_path,
                                                     const std::string& onnx_path,
                                                     const graph::Shape& input_shape,
                                                     const std::vector<uint64_t>& seeds) {
    const graph::Graph g = graph::import_onnx(onnx_path);
    for (uint64_t seed : seeds) {
        const graph::TensorData x = graph::TensorData::from_vector<float>(
            input_shape, random_floats(static_cast<size_t>(graph::shape_numel(input_shape)), seed));
        LoadedModel lib(so_path);
        ::testing::AssertionResult match = outputs_match(lib.run({x}), graph::evaluate(g, {x}));
        if (!match)
            return match << " (seed " << seed << ")";
    }
    return ::testing::AssertionSuccess();
}

ScratchDir::ScratchDir(const std::string& stem) {
    std::string pattern = fs::path(::testing::TempDir()) / (stem + "_XXXXXX");
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
        throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = buf.data();
}

std::string ScratchDir::write(const std::string& name, const std::string& bytes) const {
    const std::string path = file(name);
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    if (!out)
        throw std::runtime_error("cannot write " + path);
    return path;
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

CommandResult run_command(const std::string& cmd, const std::string& scratch_prefix) {
    const std::string out = scratch_prefix + ".out", err = scratch_prefix + ".err";
    const int status = std::system((cmd + " >" + out + " 2>" + err).c_str());
    CommandResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

} // namespace tessera::testing
