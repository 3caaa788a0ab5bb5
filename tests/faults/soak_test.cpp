// Soak: four models built once and loaded into this one process through the C API, each
// instance with 2 threads, run in rotation for fault_scale(60 s, 1800 s). Every run's outputs
// must be bitwise identical to the model's first run (which matches the reference outputs), and
// the resident set must not grow between the end of a warm-up (the first 10% of the time) and
// the end: a leak of even one page per thousand runs shows.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "common/model_library_loader.h"
#include "common/sanitizers.h"
#include "common/tessera_process.h"
#include "faults/fault_util.h"

namespace {

namespace fs = std::filesystem;
using tessera::graph::TensorData;
using tessera::testing::fault_scale;
using tessera::testing::print_figure;

/// Resident pages of this process (the second field of /proc/self/statm) in KiB, read without
/// touching the heap, so that measuring does not move what it measures. -1 when unreadable.
int64_t resident_kib() {
    const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[256];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    long long size = 0, resident = 0;
    if (std::sscanf(buf, "%lld %lld", &size, &resident) != 2)
        return -1;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/// One loaded model with its inputs, the first run's outputs and buffers for the next runs.
struct SoakModel {
    std::string name;
    std::unique_ptr<tessera::testing::LoadedModel> lib;
    std::vector<TensorData> inputs, first;
    std::vector<std::vector<unsigned char>> out_bufs;
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
    int64_t runs = 0, identical = 0;
};

} // namespace

TEST(Soak, FourModelsInOneProcessRunIdenticallyWithoutGrowing) {
    const std::string models = tessera::testing::shared_models_dir();
    const std::vector<std::string> names = {"mlp", "small_cnn", "conv_bn_relu", "bert_emb_op13"};
    for (const std::string& n : names)
        if (!fs::exists(models + "/" + n + "/model.onnx"))
            GTEST_SKIP() << "shared model absent: " << models << "/" << n;
    tessera::testing::ScratchDir dir("tessera_soak");

    // Built untuned, all at once.
    std::vector<pid_t> pids;
    for (const std::string& n : names)
        pids.push_back(tessera::testing::start_tessera(
            "build " + models + "/" + n + "/model.onnx --no-db -o " + dir.file(n + ".so"),
            dir.file(n + ".out"), dir.file(n + ".err")));
    for (size_t i = 0; i < names.size(); ++i) {
        const tessera::testing::ProcessOutput o = tessera::testing::wait_tessera(
            pids[i], dir.file(names[i] + ".out"), dir.file(names[i] + ".err"));
        ASSERT_EQ(o.code, 0) << "building " << names[i] << ":\n" << o.out << o.err;
    }

    std::vector<SoakModel> soak(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        SoakModel& m = soak[i];
        m.name = names[i];
        m.lib = std::make_unique<tessera::testing::LoadedModel>(dir.file(m.name + ".so"));
        m.lib->set_num_threads(2);
        const std::string model_dir = models + "/" + m.name;
        m.inputs = tessera::testing::read_data_set(model_dir, 0, "input");
        m.first = m.lib->run(m.inputs);
        ASSERT_TRUE(tessera::testing::outputs_match(
            m.first, tessera::testing::read_data_set(model_dir, 0, "output")))
            << m.name;
        for (const TensorData& t : m.inputs)
            m.in_ptrs.push_back(t.raw());
        for (const TensorData& t : m.first)
            m.out_bufs.emplace_back(t.nbytes());
        for (auto& b : m.out_bufs)
            m.out_ptrs.push_back(b.data());
    }

    // Once before it counts: the first call faults in the code of sscanf and sysconf after it
    // read statm (file pages, mapped 64 KiB at a time by the kernel's fault-around), which the
    // warm-up figure would miss and the end figure count as growth.
    ASSERT_GE(resident_kib(), 0) << "cannot read /proc/self/statm";
    using Clock = std::chrono::steady_clock;
    const std::chrono::seconds duration(fault_scale(60, 1800));
    const Clock::time_point start = Clock::now();
    const Clock::time_point warm = start + duration / 10, end = start + duration;
    int64_t rss_warm = -1, runs = 0, identical = 0;
    for (size_t turn = 0;; ++turn) {
        const Clock::time_point now = Clock::now();
        if (rss_warm < 0 && now >= warm)
            rss_warm = resident_kib();
        if (now >= end)
            break;
        SoakModel& m = soak[turn % soak.size()];
        // Garbage in the buffers first: an output the run failed to write cannot pass as
        // identical.
        for (auto& b : m.out_bufs)
            std::memset(b.data(), static_cast<int>(0xa5 ^ (turn & 0xff)), b.size());
        m.lib->run_raw(m.in_ptrs.data(), m.out_ptrs.data());
        bool same = true;
        for (size_t k = 0; k < m.first.size(); ++k)
            same = same &&
                   std::memcmp(m.out_bufs[k].data(), m.first[k].raw(), m.first[k].nbytes()) == 0;
        ++m.runs;
        ++runs;
        m.identical += same;
        identical += same;
    }
    const int64_t rss_end = resident_kib();
    ASSERT_GE(rss_warm, 0) << "cannot read /proc/self/statm";
    for (const SoakModel& m : soak) {
        print_figure("soak " + m.name + " runs", std::to_string(m.runs));
        EXPECT_EQ(m.identical, m.runs) << m.name << ": outputs differ from its first run";
        EXPECT_GT(m.runs, 0) << m.name;
    }
    print_figure("soak runs", std::to_string(runs));
    print_figure("soak identical outputs", std::to_string(identical) + "/" + std::to_string(runs));
    print_figure("soak RSS growth KiB", std::to_string(rss_end - rss_warm));
    // Under AddressSanitizer freed blocks sit in its quarantine instead of being reused, so
    // resident memory grows by design; its leak checker at exit is the leak test there.
    if (!tessera::testing::built_with_address_sanitizer()) {
        EXPECT_EQ(rss_end - rss_warm, 0)
            << "resident KiB after the warm-up " << rss_warm << ", at the end " << rss_end;
    }
}
