// The runtime thread pool: every index exactly once, a stalled worker's share taken over,
// nesting, small and empty ranges, many launches, the C entry point and heap allocation; and a
// printed launch-overhead measurement.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <csignal>

#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sanitizers.h"
#include "tessera/runtime/alloc.h"
#include "tessera/runtime/thread_pool.h"

using namespace tessera::runtime;

namespace {

/// Restores the thread count a test changed.
struct ThreadCountGuard {
    int saved = num_threads();
    ~ThreadCountGuard() { set_num_threads(saved); }
};

/// Runs parallel_for over [0, n) and returns how often each index was visited.
std::vector<int> visit_counts(int64_t n) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            hits[i].fetch_add(1);
    });
    std::vector<int> out;
    for (auto& h : hits)
        out.push_back(h.load());
    return out;
}

} // namespace

TEST(ThreadPool, EveryIndexExactlyOnce) {
    ThreadCountGuard guard;
    for (int threads : {1, 2, 3, 4, 7}) {
        set_num_threads(threads);
        EXPECT_EQ(num_threads(), threads);
        for (int64_t n : {1, 2, 3, 7, 13, 127, 1000, 4099}) {
            std::vector<int> counts = visit_counts(n);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(counts[i], 1)
                    << "index " << i << " of " << n << ", " << threads << " threads";
        }
    }
}

TEST(ThreadPool, PiecesAreContiguousAndCoverTheRange) {
    ThreadCountGuard guard;
    for (int threads : {2, 4}) {
        set_num_threads(threads);
        for (int64_t n : {13, 200}) {
            std::mutex mu;
            std::vector<std::pair<int64_t, int64_t>> pieces;
            parallel_for(n, [&](int64_t b, int64_t e) {
                std::lock_guard<std::mutex> g(mu);
                pieces.emplace_back(b, e);
            });
            std::sort(pieces.begin(), pieces.end());
            int64_t next = 0;
            for (auto [b, e] : pieces) {
                EXPECT_EQ(b, next) << n << " on " << threads << " threads";
                EXPECT_LT(b, e);
                next = e;
            }
            EXPECT_EQ(next, n);
        }
    }
}

// A worker that stalls in its first piece (as one descheduled by the system, or sharing its
// CPU with another process) leaves the rest of its share to the caller, but for a piece or so
// that a thief leaves to its owner; the launch returns once every iteration has run. Under
// static chunks the caller would have run its half only. The caller's iterations take a
// millisecond each, so that the worker starts (and stalls) before the caller could take all.
TEST(ThreadPool, AStalledWorkersShareIsTakenByTheCaller) {
    ThreadCountGuard guard;
    set_num_threads(2);
    const std::thread::id caller = std::this_thread::get_id();
    const int64_t n = 64, piece = n / 2 / 4; // 4 pieces per share
    std::atomic<int64_t> by_caller{0};
    std::atomic<bool> stalled{false};
    std::vector<std::atomic<int>> hits(n);
    parallel_for(n, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() == caller) {
            by_caller.fetch_add(e - b);
            std::this_thread::sleep_for(std::chrono::milliseconds(e - b));
        } else if (!stalled.exchange(true)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
        for (int64_t i = b; i < e; ++i)
            hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "index " << i;
    EXPECT_GE(by_caller.load(), n - 2 * piece) << "the caller ran " << by_caller.load();
}

TEST(ThreadPool, FewerIndicesThanThreads) {
    ThreadCountGuard guard;
    set_num_threads(8);
    std::atomic<int> calls{0};
    std::atomic<int64_t> sum{0};
    parallel_for(3, [&](int64_t b, int64_t e) {
        calls.fetch_add(1);
        for (int64_t i = b; i < e; ++i)
            sum.fetch_add(i + 1);
    });
    EXPECT_EQ(calls.load(), 3);
    EXPECT_EQ(sum.load(), 6);
}

TEST(ThreadPool, EmptyRangeRunsNothing) {
    std::atomic<int> calls{0};
    parallel_for(0, [&](int64_t, int64_t) { calls.fetch_add(1); });
    parallel_for(-5, [&](int64_t, int64_t) { calls.fetch_add(1); });
    EXPECT_EQ(calls.load(), 0);
}

TEST(ThreadPool, NestedLaunchesRunSerially) {
    ThreadCountGuard guard;
    set_num_threads(3);
    const int64_t outer = 7, inner = 13;
    std::vector<std::atomic<int>> hits(outer * inner);
    std::atomic<int> inner_chunks{0};
    parallel_for(outer, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
            std::thread::id me = std::this_thread::get_id();
            parallel_for(inner, [&](int64_t ib, int64_t ie) {
                inner_chunks.fetch_add(1);
                EXPECT_EQ(std::this_thread::get_id(), me); // serial on the same thread
                for (int64_t j = ib; j < ie; ++j)
                    hits[i * inner + j].fetch_add(1);
            });
        }
    });
    EXPECT_EQ(inner_chunks.load(), outer); // one whole-range chunk per nested launch
    for (auto& h : hits)
        EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, ManyRepeatedLaunches) {
    ThreadCountGuard guard;
    set_num_threads(4);
    std::vector<int64_t> data(97, 0);
    for (int rep = 0; rep < 20000; ++rep) {
        parallel_for(static_cast<int64_t>(data.size()), [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                data[i] += i;
        });
    }
    for (size_t i = 0; i < data.size(); ++i)
        ASSERT_EQ(data[i], 20000 * (int64_t)i);
}

TEST(ThreadPool, LaunchesFromSeveralThreadsTakeTurns) {
    ThreadCountGuard guard;
    set_num_threads(3);
    std::vector<std::thread> callers;
    std::vector<int64_t> sums(4, 0);
    for (int c = 0; c < 4; ++c) {
        callers.emplace_back([&, c] {
            for (int rep = 0; rep < 200; ++rep) {
                std::atomic<int64_t> s{0};
                parallel_for(100, [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i)
                        s.fetch_add(i);
                });
                sums[c] += s.load();
            }
        });
    }
    for (auto& t : callers)
        t.join();
    for (int64_t s : sums)
        EXPECT_EQ(s, 200 * 4950);
}

TEST(ThreadPool, WorksInAForkedChild) {
    ThreadCountGuard guard;
    set_num_threads(3);
    std::vector<int> before = visit_counts(100); // the parent's workers exist now
    ASSERT_EQ(before, std::vector<int>(100, 1));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // In the child: the pool must start fresh workers rather than wait for the parent's.
        std::vector<int> counts = visit_counts(1000);
        bool ok = counts == std::vector<int>(1000, 1);
        _exit(ok ? 0 : 1);
    }
    // A child waiting for the parent's workers would hang: give it 30 s.
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; waited_ms < 30000 && done == 0; waited_ms += 10) {
        done = waitpid(pid, &status, WNOHANG);
        if (done == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << "the forked child hung in parallel_for";
    }
    ASSERT_EQ(done, pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(visit_counts(100), std::vector<int>(100, 1)); // the parent is unaffected
}

TEST(ThreadPool, RunsOnTheThreadsThereAreWhenTheSystemRefusesMore) {
    if (tessera::testing::built_with_address_sanitizer())
        GTEST_SKIP() << "AddressSanitizer maps each new thread's fake stack itself and dies when "
                        "the address-space limit refuses it, before pthread_create can fail";
    // A child whose address space leaves room for a few dozen thread stacks asks for 4096
    // threads: the launches must run (every index once) on the workers it gets, not abort.
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        long pages = 0;
        if (FILE* f = std::fopen("/proc/self/statm", "r")) {
            if (std::fscanf(f, "%ld", &pages) != 1)
                pages = 0;
            std::fclose(f);
        }
        const rlim_t room = static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + (256u << 20);
        const struct rlimit limit = {room, room};
        if (pages == 0 || setrlimit(RLIMIT_AS, &limit) != 0)
            _exit(3);
        set_num_threads(4096);
        bool ok = true;
        for (int launch = 0; launch < 3; ++launch)
            ok = ok && visit_counts(100000) == std::vector<int>(100000, 1);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ThreadPool, CEntryPoint) {
    ThreadCountGuard guard;
    set_num_threads(2);
    std::vector<int32_t> out(127, -1);
    auto chunk = [](int64_t b, int64_t e, void* ctx) {
        auto* p = static_cast<int32_t*>(ctx);
        for (int64_t i = b; i < e; ++i)
            p[i] = static_cast<int32_t>(i * 3);
    };
    EXPECT_EQ(tessera_parallel_for(127, chunk, out.data()), 0);
    for (int i = 0; i < 127; ++i)
        EXPECT_EQ(out[i], i * 3);
}

/// The number of CPUs in the calling thread's affinity mask.
int affinity_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : -1;
}

TEST(ThreadPool, BoundThreadsEachKeepACoreOfTheirOwn) {
    ThreadCountGuard guard;
    const int cores = default_num_threads();
    if (cores < 2)
        GTEST_SKIP() << "one core: nothing to bind apart";
    const int free_cpus = affinity_cpus();
    set_num_threads(cores);
    bind_threads(true);
    // Each thread that runs a piece (the caller's included) is pinned to one CPU, a different
    // one each. The pieces take a while, so that each worker wakes in time to run its own
    // share instead of leaving it to the caller.
    std::mutex mu;
    std::map<std::thread::id, std::set<int>> cpus_of;
    std::vector<int> mask(static_cast<size_t>(cores), -1);
    parallel_for(cores, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            std::lock_guard<std::mutex> g(mu);
            cpus_of[std::this_thread::get_id()].insert(sched_getcpu());
            mask[static_cast<size_t>(i)] = affinity_cpus();
        }
    });
    EXPECT_EQ(affinity_cpus(), 1);
    EXPECT_EQ(mask, std::vector<int>(static_cast<size_t>(cores), 1));
    std::vector<int> distinct;
    for (const auto& [thread, cpus] : cpus_of) {
        EXPECT_EQ(cpus.size(), 1u) << "a bound thread ran on several CPUs";
        distinct.push_back(*cpus.begin());
    }
    std::sort(distinct.begin(), distinct.end());
    EXPECT_EQ(std::unique(distinct.begin(), distinct.end()), distinct.end())
        << "two threads shared a CPU";
    EXPECT_EQ(visit_counts(1001), std::vector<int>(1001, 1));
    // Unbound: every thread has the caller's former mask again.
    bind_threads(false);
    parallel_for(cores, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            mask[static_cast<size_t>(i)] = affinity_cpus();
    });
    EXPECT_EQ(affinity_cpus(), free_cpus);
    EXPECT_EQ(mask, std::vector<int>(static_cast<size_t>(cores), free_cpus));
}

TEST(ThreadPool, DefaultThreadCount) {
    ThreadCountGuard guard;
    EXPECT_GE(default_num_threads(), 1);
    set_num_threads(0);
    EXPECT_EQ(num_threads(), default_num_threads());
    set_num_threads(-3);
    EXPECT_EQ(num_threads(), default_num_threads());
}

TEST(Alloc, AlignedAndUsable) {
    for (int64_t bytes : {0, 1, 7, 64, 1000, 1 << 20}) {
        auto* p = static_cast<unsigned char*>(tessera_alloc(bytes));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
        for (int64_t i = 0; i < bytes; ++i)
            p[i] = static_cast<unsigned char>(i);
        for (int64_t i = 0; i < bytes; ++i)
            ASSERT_EQ(p[i], static_cast<unsigned char>(i));
        tessera_free(p);
    }
    tessera_free(nullptr);
}

// Not a pass/fail check: prints the cost of an empty launch so regressions are visible.
TEST(ThreadPool, LaunchOverheadIsReported) {
    ThreadCountGuard guard;
    for (int threads : {1, 2, default_num_threads()}) {
        set_num_threads(threads);
        auto empty = [](int64_t, int64_t, void*) {};
        const int reps = 20000;
        for (int i = 0; i < 1000; ++i)
            tessera_parallel_for(1024, empty, nullptr); // warm up
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i)
            tessera_parallel_for(1024, empty, nullptr);
        auto t1 = std::chrono::steady_clock::now();
        double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / reps;
        std::printf("[ overhead ] empty parallel_for on %d threads: %.3f us per launch\n", threads,
                    us);
        EXPECT_GT(us, 0.0);
        // After an idle gap the workers sleep: this is the wake-up cost.
        double wake_total = 0;
        const int wakes = 50;
        for (int i = 0; i < wakes; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            auto w0 = std::chrono::steady_clock::now();
            tessera_parallel_for(1024, empty, nullptr);
            wake_total +=
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0)
                    .count();
        }
        std::printf("[ overhead ] launch to sleeping workers on %d threads: %.1f us\n", threads,
                    wake_total / wakes);
    }
}
