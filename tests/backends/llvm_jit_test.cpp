// JitModule and object emission: several functions per module, the optimized IR and assembly
// (vector FMAs), the shared-library path, errors, concurrent compilation and host detection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/backends/model_object.h"
#include "tessera/ir/op.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/support/error.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

Expr ld(const Buffer& b, Expr i) { return Load::make(b, i); }

/// C[i] = A[i] * B[i] + C[i] over n floats, as a serial scalar loop.
LoweredFunc saxpy_like(const std::string& name, int64_t n, ForKind kind = ForKind::Serial) {
    Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
           C = buf("C", DataType::f32(), n);
    Stmt body = loop("i", n, kind,
                     [&](Var i) { return Store::make(C, ld(A, i) * ld(B, i) + ld(C, i), i); });
    return LoweredFunc{name, {A, B, C}, body};
}

/// A scratch directory removed at the end of the test.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/tessera_jit_test_XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() {
        std::string cmd = "rm -rf '" + path + "'";
        if (std::system(cmd.c_str()) != 0)
            std::fprintf(stderr, "cannot remove %s\n", path.c_str());
    }
};

} // namespace

TEST(LlvmJit, SeveralFunctionsInOneModule) {
    const int64_t n = 127;
    LoweredFunc f = saxpy_like("fma_loop", n);
    Buffer X = buf("X", DataType::f32(), n), Y = buf("Y", DataType::f32(), n);
    LoweredFunc g{"negate", {X, Y}, loop("i", n, ForKind::Serial, [&](Var i) {
                      return Store::make(Y, 0.0f - ld(X, i), i);
                  })};
    auto jit = backend::JitModule::compile({f, g});
    EXPECT_EQ(jit->function_names(), (std::vector<std::string>{"fma_loop", "negate"}));
    auto a = random_floats(n, 1), b = random_floats(n, 2), c = random_floats(n, 3);
    std::vector<float> want(n), y(n);
    for (int64_t i = 0; i < n; ++i)
        want[i] = a[i] * b[i] + c[i];
    void* args[] = {a.data(), b.data(), c.data()};
    jit->get("fma_loop")(args);
    EXPECT_LT(max_rel_error(c, want), 1e-6);
    void* args2[] = {a.data(), y.data()};
    jit->get("negate")(args2);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(y[i], -a[i]);
}

TEST(LlvmJit, ScalarLoopIsVectorizedWithFma) {
    backend::CompileOptions opts;
    opts.keep_llvm_ir = true;
    opts.keep_assembly = true;
    auto jit = backend::JitModule::compile({saxpy_like("f", 1024)}, opts);
    const std::string& ir = jit->llvm_ir();
    bool wide =
        ir.find("<8 x float>") != std::string::npos || ir.find("<16 x float>") != std::string::npos;
    EXPECT_TRUE(wide) << ir;
    EXPECT_NE(ir.find("llvm.fmuladd.v"), std::string::npos) << ir;
    EXPECT_NE(jit->assembly().find("vfmadd"), std::string::npos);
}

TEST(LlvmJit, ExplicitVectorLoopKeepsVectorFma) {
    const int lanes = 8;
    const int64_t n = 16 * lanes;
    Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
           C = buf("C", DataType::f32(), n);
    Stmt body = loop("i", 16, ForKind::Serial, [&](Var i) {
        Expr idx = Ramp::make(i * lanes, Expr(1), lanes);
        return Store::make(C, ld(A, idx) * ld(B, idx) + ld(C, idx), idx);
    });
    backend::CompileOptions opts;
    opts.keep_llvm_ir = true;
    auto jit = backend::JitModule::compile({LoweredFunc{"f", {A, B, C}, body}}, opts);
    EXPECT_NE(jit->llvm_ir().find("<8 x float>"), std::string::npos);
    EXPECT_NE(jit->llvm_ir().find("@llvm.fmuladd.v8f32"), std::string::npos);
    // Parameters never overlap: the loads carry no runtime alias checks.
    EXPECT_NE(jit->llvm_ir().find("noalias"), std::string::npos);
}

TEST(LlvmJit, OptLevelZeroStillRuns) {
    backend::CompileOptions opts;
    opts.opt_level = 0;
    const int64_t n = 13;
    auto jit = backend::JitModule::compile({saxpy_like("f", n)}, opts);
    auto a = random_floats(n, 4), b = random_floats(n, 5), c = random_floats(n, 6);
    std::vector<float> want(n);
    for (int64_t i = 0; i < n; ++i)
        want[i] = a[i] * b[i] + c[i];
    void* args[] = {a.data(), b.data(), c.data()};
    jit->get("f")(args);
    EXPECT_LT(max_rel_error(c, want), 1e-6);
}

TEST(LlvmJit, ObjectFileLinkedIntoSharedLibrary) {
    TempDir dir;
    const int64_t n = 127;
    LoweredFunc f = saxpy_like("tessera_test_aot_fma", n, ForKind::Parallel);
    Buffer X = buf("X", DataType::f32(), n), Y = buf("Y", DataType::f32(), n);
    Buffer T = buf("T", DataType::f32(), n);
    Stmt g_body = Allocate::make(
        T, MemoryScope::Heap,
        Seq::make(
            {loop("i", n, ForKind::Serial, [&](Var i) { return Store::make(T, exp(ld(X, i)), i); }),
             loop("i", n, ForKind::Serial,
                  [&](Var i) { return Store::make(Y, ld(T, i) + 1.0f, i); })}));
    LoweredFunc g{"tessera_test_aot_exp", {X, Y}, g_body};
    std::string obj = dir.path + "/kernels.o", so = dir.path + "/libkernels.so";
    backend::emit_object_file({f, g}, obj);
    backend::link_shared_library({obj}, so);

    void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto fn = reinterpret_cast<backend::JitModule::KernelFn>(dlsym(handle, "tessera_test_aot_fma"));
    auto gn = reinterpret_cast<backend::JitModule::KernelFn>(dlsym(handle, "tessera_test_aot_exp"));
    ASSERT_NE(fn, nullptr);
    ASSERT_NE(gn, nullptr);
    runtime::set_num_threads(2);
    auto a = random_floats(n, 7), b = random_floats(n, 8), c = random_floats(n, 9);
    std::vector<float> want(n), y(n);
    for (int64_t i = 0; i < n; ++i)
        want[i] = a[i] * b[i] + c[i];
    void* args[] = {a.data(), b.data(), c.data()};
    fn(args);
    EXPECT_LT(max_rel_error(c, want), 1e-6);
    void* args2[] = {a.data(), y.data()};
    gn(args2);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(y[i], std::exp(a[i]) + 1.0f, 1e-6 * std::exp(a[i]));
    runtime::set_num_threads(0);
    dlclose(handle);
}

// Objects of this host's machine link with GNU ld (a fifth of a tuner candidate's build less
// than ld.lld), those of another with ld.lld: an aarch64 object gives an aarch64 library.
TEST(LlvmJit, ObjectsOfAnotherMachineLinkForThatMachine) {
    TempDir dir;
    backend::CompileOptions arm;
    arm.triple = "aarch64-linux-gnu";
    arm.cpu = "neoverse-n1";
    const std::string obj = dir.path + "/arm.o", so = dir.path + "/libarm.so";
    backend::emit_object_file({saxpy_like("tessera_test_arm", 64)}, obj, arm);
    backend::link_shared_library({obj}, so);
    Elf64_Ehdr header{};
    std::ifstream in(so, std::ios::binary);
    ASSERT_TRUE(in.read(reinterpret_cast<char*>(&header), sizeof header));
    EXPECT_EQ(header.e_machine, EM_AARCH64);
    EXPECT_EQ(header.e_type, ET_DYN);
}

TEST(LlvmJit, EmitLlvmIrWithoutJit) {
    std::string ir = backend::emit_llvm_ir({saxpy_like("emit_me", 64)});
    EXPECT_NE(ir.find("define void @emit_me(ptr"), std::string::npos) << ir;
}

TEST(LlvmJit, LinkFailureIsUserError) {
    TempDir dir;
    EXPECT_THROW(backend::link_shared_library({dir.path + "/missing.o"}, dir.path + "/x.so"),
                 UserError);
    EXPECT_THROW(backend::link_shared_library({}, dir.path + "/x.so"), UserError);
    EXPECT_THROW(backend::emit_object_file({saxpy_like("f", 8)}, "/nonexistent_dir/x.o"),
                 UserError);
}

namespace {

/// The message of the UserError `work` throws ("no error" when it throws none).
std::string user_error_of(const std::function<void()>& work) {
    try {
        work();
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

// A full disk is a UserError saying so. Before the fix the output stream, destroyed with its
// write error still set, ended the process through LLVM's report_fatal_error ("LLVM ERROR: IO
// failure on output stream"), so a build whose temporary folder was full left it behind and
// printed no error line. /dev/full refuses every write with ENOSPC.
TEST(LlvmJit, FullDiskIsAUserErrorNotAnAbort) {
    if (access("/dev/full", W_OK) != 0)
        GTEST_SKIP() << "no writable /dev/full";
    const std::string kernel =
        user_error_of([] { backend::emit_object_file({saxpy_like("f", 8)}, "/dev/full"); });
    EXPECT_NE(kernel.find("'/dev/full': No space left on device"), std::string::npos) << kernel;
    backend::ModelDataObject data;
    data.plan_bytes = "plan";
    data.weights.assign(4096, 1);
    data.kernel_symbols = {"tessera_k0"};
    const std::string model =
        user_error_of([&] { backend::emit_model_data_object(data, "/dev/full"); });
    EXPECT_NE(model.find("'/dev/full': No space left on device"), std::string::npos) << model;
}

// The linker's complaint spans several lines ("ld: ... file format not recognized", "collect2:
// error: ld returned 1 exit status"); the error carrying it is one line, as tessera's errors are.
TEST(LlvmJit, LinkErrorsAreOneLine) {
    TempDir dir;
    const std::string bad = dir.path + "/bad.o";
    std::ofstream(bad) << "not an object file\n";
    for (const std::string& m :
         {user_error_of([&] { backend::link_shared_library({bad}, dir.path + "/a.so"); }),
          user_error_of([&] { backend::link_model_library({bad}, bad, dir.path + "/b.so"); })}) {
        EXPECT_NE(m.find("failed (exit"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
}

TEST(LlvmJit, ContractViolationsAreInternalErrors) {
    // A GPU binding never reaches the CPU backend; a Vectorized loop is prepared by it.
    EXPECT_THROW(backend::JitModule::compile({saxpy_like("f", 8, ForKind::GpuBlockX)}),
                 InternalError);
    EXPECT_NO_THROW(backend::JitModule::compile({saxpy_like("f", 8, ForKind::Vectorized)}));
    EXPECT_THROW(backend::JitModule::compile({saxpy_like("f", 8), saxpy_like("f", 8)}),
                 InternalError);
    EXPECT_THROW(backend::JitModule::compile({saxpy_like("bad name", 8)}), InternalError);
    EXPECT_THROW(backend::JitModule::compile({saxpy_like("expf", 8)}), InternalError);
    Var free_var("n");
    Buffer O = buf("O", DataType::i64(), 4);
    LoweredFunc free{"free", {O}, Store::make(O, free_var, Expr(0))};
    EXPECT_THROW(backend::JitModule::compile({free}), InternalError);
    Buffer other = buf("other", DataType::i64(), 4);
    LoweredFunc unknown{"unknown", {O}, Store::make(other, Expr(1), Expr(0))};
    EXPECT_THROW(backend::JitModule::compile({unknown}), InternalError);
    auto jit = backend::JitModule::compile({saxpy_like("f", 8)});
    EXPECT_THROW(jit->get("g"), UserError);
    EXPECT_THROW(jit->llvm_ir(), InternalError);
}

TEST(LlvmJit, ConcurrentCompilationAndExecution) {
    const int workers = 4;
    std::vector<std::thread> threads;
    std::vector<double> errors(workers, 1.0);
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            // Several rounds, so that compilations on different threads overlap.
            double worst = 0;
            for (int round = 0; round < 10; ++round) {
                const int64_t n = 13 + w + round;
                auto jit = backend::JitModule::compile({saxpy_like("f" + std::to_string(w), n)});
                auto a = random_floats(n, 10 + w), b = random_floats(n, 20 + w),
                     c = random_floats(n, 30 + w);
                std::vector<float> want(n);
                for (int64_t i = 0; i < n; ++i)
                    want[i] = a[i] * b[i] + c[i];
                void* args[] = {a.data(), b.data(), c.data()};
                jit->get("f" + std::to_string(w))(args);
                worst = std::max(worst, max_rel_error(c, want));
            }
            errors[w] = worst;
        });
    }
    for (auto& t : threads)
        t.join();
    for (double e : errors)
        EXPECT_LT(e, 1e-6);
}

TEST(CpuInfo, DescribesThisMachine) {
    const backend::CpuInfo& h = backend::host_info();
    EXPECT_FALSE(h.triple.empty());
    EXPECT_FALSE(h.cpu_name.empty());
    EXPECT_GE(h.cores, 1);
    EXPECT_TRUE(std::is_sorted(h.features.begin(), h.features.end()));
    for (const auto& f : h.features)
        EXPECT_NE(f[0], '+');
    EXPECT_GE(h.vector_bits, 128);
    if (h.has_feature("avx2")) {
        EXPECT_GE(h.vector_bits, 256);
    }
    if (h.has_feature("avx512f")) {
        EXPECT_EQ(h.vector_bits, 512);
    }
    EXPECT_FALSE(h.has_feature("no-such-feature"));
    EXPECT_EQ(&h, &backend::host_info());
#if defined(__x86_64__)
    EXPECT_TRUE(h.has_feature("sse2"));
    EXPECT_GT(h.l1d_bytes, 0);
#endif
}
