// Cache-line round trip between two CPUs (core_round_trip.h).
#include "core_round_trip.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tessera/support/error.h"

namespace tessera::cli {

namespace {

bool pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/// The first two CPUs of this process's affinity mask; false when it has fewer.
bool first_two_cpus(int& a, int& b) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return false;
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
        if (CPU_ISSET(c, &set))
            cpus.push_back(c);
    if (cpus.size() < 2)
        return false;
    a = cpus[0];
    b = cpus[1];
    return true;
}

} // namespace

std::optional<double> measure_core_round_trip_ns(int rounds) {
    TESSERA_CHECK(rounds >= 5) << rounds << " rounds";
    int a = 0, b = 0;
    if (!first_two_cpus(a, b))
        return std::nullopt;
    constexpr int kBatches = 5;
    const int per_batch = rounds / kBatches;
    // The main thread writes odd values and waits for the next even one; the partner answers.
    alignas(64) std::atomic<int64_t> line{0};
    std::atomic<bool> partner_pinned{true};
    std::thread partner([&] {
        partner_pinned = pin_to(b);
        for (int64_t i = 0; i < int64_t{kBatches} * per_batch; ++i) {
            while (line.load(std::memory_order_acquire) != 2 * i + 1) {
            }
            line.store(2 * i + 2, std::memory_order_release);
        }
    });
    // The current thread's own mask is restored afterwards.
    cpu_set_t saved;
    CPU_ZERO(&saved);
    const bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
    const bool pinned = pin_to(a);
    std::vector<double> batch_ns;
    int64_t i = 0;
    for (int k = 0; k < kBatches; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int j = 0; j < per_batch; ++j, ++i) {
            line.store(2 * i + 1, std::memory_order_release);
            while (line.load(std::memory_order_acquire) != 2 * i + 2) {
            }
        }
        batch_ns.push_back(
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                .count() /
            per_batch);
    }
    partner.join();
    if (have_saved)
        pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    if (!pinned || !partner_pinned)
        return std::nullopt;
    std::nth_element(batch_ns.begin(), batch_ns.begin() + kBatches / 2, batch_ns.end());
    return batch_ns[kBatches / 2];
}

} // namespace tessera::cli
