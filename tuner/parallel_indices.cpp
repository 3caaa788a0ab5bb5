// See parallel_indices.h.
#include "parallel_indices.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace tessera::tune {

void for_each_index(size_t n, int num_threads, const std::function<void(size_t)>& work) {
    if (n == 0)
        return;
    size_t threads =
        num_threads > 0 ? size_t(num_threads) : std::max(1u, std::thread::hardware_concurrency());
    threads = std::min(threads, n);
    std::atomic<size_t> next{0};
    auto loop = [&] {
        for (size_t i = next++; i < n; i = next++)
            work(i);
    };
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t)
        pool.emplace_back(loop);
    loop();
    for (std::thread& t : pool)
        t.join();
}

} // namespace tessera::tune
