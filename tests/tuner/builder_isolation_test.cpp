// The builder compiles each candidate in a compile process of its own: a code generator that
// crashes, aborts, exits or hangs costs its candidate an error and leaves the tuner (this test
// process) running, with the other candidates of the batch built.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/sanitizers.h"
#include "tessera/lower/lower_default.h"
#include "tessera/te/op_library.h"
#include "tessera/tuner/builder.h"

#include <unistd.h>

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;
using ir::DataType;
using te::Tensor;

/// A 5x3 matrix product whose first input is named `name`: the name tells the test's code
/// generator which fault to play.
LowerFn candidate_named(const std::string& name) {
    Tensor a = te::placeholder({5, 7}, DataType::f32(), name);
    Tensor b = te::placeholder({7, 3}, DataType::f32(), "B");
    te::Compute c = te::make_compute({a, b}, {te::matmul(a, b)});
    return [c](const std::string& symbol) { return lower::lower_default(c, symbol); };
}

/// Emits and links like the real builder, except for candidates whose first input names a
/// fault.
void faulty_codegen(const ir::LoweredFunc& f, const std::string& obj, const std::string& so) {
    const std::string& fault = f.params.at(0).name();
    if (fault == "segfault")
        std::raise(SIGSEGV);
    if (fault == "abort")
        std::abort();
    if (fault == "fatal") { // what LLVM's report_fatal_error does without a handler
        std::fputs("LLVM ERROR: emulated fatal error\n", stderr);
        std::exit(1);
    }
    if (fault == "hang") { // leaves a mark if it lives to see the end of its sleep
        std::this_thread::sleep_for(std::chrono::seconds(60));
        std::fclose(std::fopen((so + ".survived").c_str(), "w"));
    }
    backend::emit_object_file({f}, obj);
    backend::link_shared_library({obj}, so);
}

struct TempDir {
    std::string path;
    TempDir() {
        char templ[] = "/tmp/tessera_builder_test_XXXXXX";
        path = mkdtemp(templ);
    }
    ~TempDir() { fs::remove_all(path); }
};

/// Options of a builder in `dir` with `threads` build threads and the faulty code generator.
BuilderOptions faulty_builder(const TempDir& dir, int threads) {
    BuilderOptions o;
    o.work_dir = dir.path;
    o.threads = threads;
    o.codegen = faulty_codegen;
    return o;
}

/// Fails unless `dir` holds libraries only: no mark of a compile that lived on after its kill.
void expect_only_libraries(const TempDir& dir) {
    for (const auto& e : fs::directory_iterator(dir.path))
        EXPECT_EQ(e.path().extension(), ".so") << e.path() << ": a killed compile lived on";
}

TEST(BuilderIsolation, CrashingCodegenCostsOneCandidateNotTheProcess) {
    TempDir dir;
    BuilderOptions o = faulty_builder(dir, 2);
    Builder builder(o);
    const std::vector<BuildResult> rs =
        builder.build({candidate_named("segfault"), candidate_named("A"), candidate_named("abort"),
                       candidate_named("fatal"), candidate_named("A")});
    ASSERT_EQ(rs.size(), 5u);
    EXPECT_EQ(rs[0].error, MeasureError::CompileHost);
    EXPECT_NE(rs[0].error_message.find(tessera::testing::segfault_death()), std::string::npos)
        << rs[0].error_message;
    EXPECT_EQ(rs[2].error, MeasureError::CompileHost);
    EXPECT_NE(rs[2].error_message.find("signal 6"), std::string::npos) << rs[2].error_message;
    EXPECT_EQ(rs[3].error, MeasureError::CompileHost);
    EXPECT_NE(rs[3].error_message.find("LLVM ERROR: emulated fatal error"), std::string::npos)
        << rs[3].error_message;
    for (size_t i : {1, 4}) {
        EXPECT_EQ(rs[i].error, MeasureError::Ok) << rs[i].error_message;
        EXPECT_TRUE(fs::exists(rs[i].library_path));
        EXPECT_EQ(rs[i].params.size(), 3u);
    }
    for (size_t i : {0, 2, 3})
        EXPECT_TRUE(rs[i].library_path.empty());
    // Nothing left behind for the failed ones: only the two libraries.
    size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path))
        ++files;
    EXPECT_EQ(files, 2u);
}

TEST(BuilderIsolation, HangingCodegenIsKilledAtTheTimeLimit) {
    TempDir dir;
    BuilderOptions o = faulty_builder(dir, 1);
    o.timeout_secs = 1;
    {
        Builder builder(o);
        const std::vector<BuildResult> rs =
            builder.build({candidate_named("hang"), candidate_named("A")});
        EXPECT_EQ(rs[0].error, MeasureError::BuildTimeout) << rs[0].error_message;
        EXPECT_EQ(rs[1].error, MeasureError::Ok) << rs[1].error_message;
    } // the destructor waits for the hung build's thread, which ends once its process is killed
    expect_only_libraries(dir);
}

TEST(BuilderIsolation, StragglerIsGivenUpOnceItsBatchHasAMedian) {
    // The hung compile starts first; once eight builds of the batch have finished, it has run
    // far past 5x their median (and the 0.2 s floor) and is given up long before the 60 s
    // time limit, which would have let it finish and leave its mark.
    TempDir dir;
    BuilderOptions o = faulty_builder(dir, 2);
    o.straggler_min_secs = 0.2;
    ASSERT_EQ(o.straggler_min_builds, 8);
    ASSERT_EQ(o.timeout_secs, 60);
    {
        Builder builder(o);
        std::vector<LowerFn> batch = {candidate_named("hang")};
        for (int i = 0; i < 8; ++i)
            batch.push_back(candidate_named("A"));
        const std::vector<BuildResult> rs = builder.build(batch);
        EXPECT_EQ(rs[0].error, MeasureError::BuildTimeout) << rs[0].error_message;
        EXPECT_NE(rs[0].error_message.find("straggler limit"), std::string::npos)
            << rs[0].error_message;
        EXPECT_NE(rs[0].error_message.find("of the batch's 8 builds"), std::string::npos)
            << rs[0].error_message;
        for (size_t i = 1; i < rs.size(); ++i)
            EXPECT_EQ(rs[i].error, MeasureError::Ok) << rs[i].error_message;
    }
    expect_only_libraries(dir);
}

TEST(BuilderIsolation, FewBuildsSetNoStragglerLimit) {
    // Two builds of a batch are no median: a slow one among them waits for the time limit.
    TempDir dir;
    BuilderOptions o = faulty_builder(dir, 1);
    o.timeout_secs = 1;
    o.straggler_min_secs = 0.01;
    Builder builder(o);
    const std::vector<BuildResult> rs =
        builder.build({candidate_named("A"), candidate_named("A"), candidate_named("hang")});
    EXPECT_EQ(rs[2].error, MeasureError::BuildTimeout);
    EXPECT_NE(rs[2].error_message.find("time limit of 1 s"), std::string::npos)
        << rs[2].error_message;
}

} // namespace
} // namespace tessera::tune
