// tessera-run-model: runs a model library through its C API (tessera_model.h, loaded by the
// command's own loader, src/cli/model_library.cpp) on .npy inputs and writes .npy outputs,
// nothing else. It needs no LLVM, so it is built for every architecture tessera
// cross-compiles to and runs where the library runs: on a board, or under qemu-user on this
// machine (the aarch64 tests).
//
//   tessera-run-model LIB.so [--input NAME=FILE.npy | FILE.npy]... [--output DIR]
//                     [--threads N] [--repeat N]
//
// Inputs are given by name, or by position in the library's input order. Each output is
// written as DIR/output_<i>.npy (i in output order). --repeat N runs N more times after the
// first and prints the median milliseconds of one run. Exit 1 with "error: ..." on bad input.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../cli/model_library.h"
#include "tessera/runtime/tessera_model.h"

namespace {

struct Fail : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The .npy descr of a TesseraDType, and its element size; {"", 0} for a type without one.
std::pair<std::string, int> npy_type(int dtype) {
    switch (dtype) {
    case TESSERA_F32:
        return {"<f4", 4};
    case TESSERA_F64:
        return {"<f8", 8};
    case TESSERA_I32:
        return {"<i4", 4};
    case TESSERA_I64:
        return {"<i8", 8};
    case TESSERA_BOOL:
        return {"|b1", 1};
    case TESSERA_F16:
        return {"<f2", 2};
    case TESSERA_I8:
        return {"|i1", 1};
    case TESSERA_U8:
        return {"|u1", 1};
    case TESSERA_I16:
        return {"<i2", 2};
    case TESSERA_U16:
        return {"<u2", 2};
    case TESSERA_U32:
        return {"<u4", 4};
    case TESSERA_U64:
        return {"<u8", 8};
    default:
        return {"", 0};
    }
}

std::string shape_text(const std::vector<int64_t>& s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i)
        t += std::to_string(s[i]) + (s.size() == 1 || i + 1 < s.size() ? "," : "");
    return t + ")";
}

/// The value of `key` in a .npy header dict ("'descr': '<f4', 'shape': (1, 784), ...").
std::string header_field(const std::string& h, const std::string& key, const std::string& path) {
    const size_t k = h.find("'" + key + "'");
    if (k == std::string::npos)
        throw Fail("'" + path + "': .npy header has no " + key);
    size_t v = h.find(':', k) + 1;
    while (v < h.size() && h[v] == ' ')
        ++v;
    const char open = h[v];
    const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
    const size_t end = h.find(close, v + 1);
    return h.substr(v, end == std::string::npos ? std::string::npos : end - v + 1);
}

struct Npy {
    std::string descr;
    bool fortran = false;
    std::vector<int64_t> shape;
    std::string data;
};

Npy read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Fail("cannot read '" + path + "'");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
        throw Fail("'" + path + "' is not a .npy file");
    const int major = static_cast<unsigned char>(bytes[6]);
    size_t len = 0, start = 0;
    if (major == 1) {
        len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
        start = 10;
    } else {
        if (bytes.size() < 12)
            throw Fail("'" + path + "': truncated .npy header");
        for (int i = 3; i >= 0; --i)
            len = len << 8 | static_cast<unsigned char>(bytes[8 + i]);
        start = 12;
    }
    if (start + len > bytes.size())
        throw Fail("'" + path + "': truncated .npy header");
    const std::string h = bytes.substr(start, len);
    Npy n;
    n.descr = header_field(h, "descr", path);
    n.descr = n.descr.substr(1, n.descr.size() - 2);
    n.fortran = header_field(h, "fortran_order", path).rfind("True", 0) == 0;
    std::string dims = header_field(h, "shape", path);
    std::replace(dims.begin(), dims.end(), ',', ' ');
    std::istringstream ds(dims.substr(1, dims.size() - 2));
    for (int64_t d; ds >> d;)
        n.shape.push_back(d);
    n.data = bytes.substr(start + len);
    return n;
}

void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
               const void* data, size_t bytes) {
    std::string h =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
    const size_t total = 10 + h.size() + 1;
    h.append((64 - total % 64) % 64, ' ');
    h += '\n';
    std::ofstream out(path, std::ios::binary);
    const unsigned char pre[10] = {0x93,
                                   'N',
                                   'U',
                                   'M',
                                   'P',
                                   'Y',
                                   1,
                                   0,
                                   static_cast<unsigned char>(h.size() & 0xff),
                                   static_cast<unsigned char>(h.size() >> 8)};
    out.write(reinterpret_cast<const char*>(pre), 10);
    out << h;
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!out)
        throw Fail("cannot write '" + path + "'");
}

struct Tensor {
    std::string name, descr;
    std::vector<int64_t> shape;
    size_t bytes = 0;
};

Tensor describe(const tessera::cli::ModelTensorInfo& info, const char* what, size_t index) {
    const auto [descr, size] = npy_type(info.dtype);
    if (size == 0)
        throw Fail(std::string(what) + " " + std::to_string(index) + " '" + info.name +
                   "' has an element type without a .npy form (" +
                   tessera::cli::model_dtype_name(info.dtype) + ")");
    return {info.name, descr, info.shape, static_cast<size_t>(tessera::cli::dense_bytes(info))};
}

int run(int argc, char** argv) {
    std::string lib_path, out_dir;
    std::vector<std::string> inputs;
    int threads = 0, repeat = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                throw Fail(a + " needs a value");
            return argv[++i];
        };
        if (a == "--input")
            inputs.push_back(value());
        else if (a == "--output")
            out_dir = value();
        else if (a == "--threads")
            threads = std::stoi(value());
        else if (a == "--repeat")
            repeat = std::stoi(value());
        else if (a == "-h" || a == "--help") {
            std::printf("usage: %s LIB.so [--input NAME=FILE.npy | FILE.npy]... [--output DIR] "
                        "[--threads N] [--repeat N]\n",
                        argv[0]);
            return 0;
        } else if (!a.empty() && a[0] == '-')
            throw Fail("unknown option " + a);
        else if (lib_path.empty())
            lib_path = a;
        else
            inputs.push_back(a);
    }
    if (lib_path.empty())
        throw Fail("no model library given (usage: LIB.so --input ... --output DIR)");
    if (threads < 0 || repeat < 0)
        throw Fail("--threads and --repeat must be >= 0");
    // The command's loader: the same checks (ELF machine, truncation, ABI version, missing
    // functions) and messages as `tessera run`.
    const tessera::cli::ModelLibrary lib(lib_path);
    tessera::cli::ModelInstance m(lib);
    if (threads > 0)
        m.set_num_threads(threads);
    std::vector<Tensor> in_t, out_t;
    for (size_t i = 0; i < m.inputs().size(); ++i)
        in_t.push_back(describe(m.inputs()[i], "input", i));
    for (size_t i = 0; i < m.outputs().size(); ++i)
        out_t.push_back(describe(m.outputs()[i], "output", i));
    const int ni = static_cast<int>(in_t.size());
    if (static_cast<int>(inputs.size()) != ni)
        throw Fail("the model has " + std::to_string(ni) + " inputs, " +
                   std::to_string(inputs.size()) + " given");
    std::vector<std::string> data(static_cast<size_t>(ni));
    std::vector<bool> given(static_cast<size_t>(ni), false);
    for (size_t k = 0; k < inputs.size(); ++k) {
        size_t idx = k;
        std::string path = inputs[k];
        if (const size_t eq = path.find('='); eq != std::string::npos) {
            const std::string name = path.substr(0, eq);
            path = path.substr(eq + 1);
            const auto it = std::find_if(in_t.begin(), in_t.end(),
                                         [&](const Tensor& t) { return t.name == name; });
            if (it == in_t.end())
                throw Fail("the model has no input named '" + name + "'");
            idx = static_cast<size_t>(it - in_t.begin());
        }
        if (given[idx])
            throw Fail("input '" + in_t[idx].name + "' given twice");
        given[idx] = true;
        const Npy n = read_npy(path);
        const Tensor& t = in_t[idx];
        if (n.descr != t.descr || n.fortran || n.shape != t.shape || n.data.size() < t.bytes)
            throw Fail("input '" + t.name + "' is " + t.descr + " " + shape_text(t.shape) + ", '" +
                       path + "' holds " + n.descr + " " + shape_text(n.shape) +
                       (n.fortran ? " in Fortran order" : ""));
        data[idx] = n.data.substr(0, t.bytes);
    }
    std::vector<const void*> in_ptr;
    for (const std::string& d : data)
        in_ptr.push_back(d.data());
    std::vector<std::vector<char>> outs;
    std::vector<void*> out_ptr;
    for (const Tensor& t : out_t)
        outs.emplace_back(t.bytes);
    for (auto& o : outs)
        out_ptr.push_back(o.data());

    m.run(in_ptr.data(), out_ptr.data());
    if (repeat > 0) {
        std::vector<double> ms;
        for (int r = 0; r < repeat; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            m.run(in_ptr.data(), out_ptr.data());
            ms.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
        }
        std::sort(ms.begin(), ms.end());
        std::printf("median %.4f ms of %d runs\n", ms[ms.size() / 2], repeat);
    }
    if (!out_dir.empty())
        for (size_t i = 0; i < out_t.size(); ++i)
            write_npy(out_dir + "/output_" + std::to_string(i) + ".npy", out_t[i].descr,
                      out_t[i].shape, outs[i].data(), out_t[i].bytes);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
