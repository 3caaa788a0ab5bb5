// See parallel_indices.h.
#include "parallel_indices.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
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
    std::mutex mu;
    std::exception_ptr first_error; // guarded by mu
    auto loop = [&] {
        for (size_t i = next++; i < n; i = next++) {
            try {
                work(i);
            } catch (...) {
                std::lock_guard<std::mutex> g(mu);
                if (!first_error)
                    first_error = std::current_exception();
                next = n; // claim nothing more
            }
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t)
        pool.emplace_back(loop);
    loop();
    for (std::thread& t : pool)
        t.join();
    if (first_error)
        std::rethrow_exception(first_error);
}

} // namespace tessera::tune
