// Running one function over a range of indices on a few threads: the search's lowering,
// sampling and mutation, each a pure function of its inputs (and of a seed drawn in order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "tessera/support/rng.h"

namespace tessera::tune {

/// Calls work(i) once for every i in [0, n), on up to num_threads threads (0 = the host's
/// cores; the calling thread is one of them), and returns when every call has returned. Calls
/// run in no particular order, so a caller that wants results independent of the thread count
/// writes each call's result into its own slot i and combines them in index order afterwards.
/// Pre: work is safe to run concurrently for distinct i.
/// Throws: the first exception a call of work threw, once every running call has returned (no
/// call starts after it); which indices ran then is unspecified.
void for_each_index(size_t n, int num_threads, const std::function<void(size_t)>& work);

/// n values made from random draws on num_threads threads, the same for every thread count:
/// draw(rng) runs n times on this thread, in order, each call followed by one rng.next() that
/// seeds the item's own generator; make(drawn, own) then runs for every item through
/// for_each_index. Returns the made values in draw order. Pre: make is safe to run
/// concurrently (it reads shared state only). Throws what for_each_index throws.
template <class Draw, class Make>
auto draw_then_make(size_t n, Rng& rng, int num_threads, Draw draw, Make make) {
    using Drawn = decltype(draw(rng));
    using Made = decltype(make(std::declval<const Drawn&>(), rng));
    std::vector<Drawn> drawn;
    std::vector<uint64_t> seed;
    drawn.reserve(n);
    seed.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        drawn.push_back(draw(rng));
        seed.push_back(rng.next());
    }
    std::vector<Made> made(n);
    for_each_index(n, num_threads, [&](size_t i) {
        Rng own(seed[i]);
        made[i] = make(drawn[i], own);
    });
    return made;
}

} // namespace tessera::tune
