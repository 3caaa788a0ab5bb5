// Running one function over a range of indices on a few threads: the search's lowering,
// sampling and mutation, each a pure function of its inputs.
#pragma once

#include <cstddef>
#include <functional>

namespace tessera::tune {

/// Calls work(i) once for every i in [0, n), on up to num_threads threads (0 = the host's
/// cores; the calling thread is one of them), and returns when every call has returned. Calls
/// run in no particular order, so a caller that wants results independent of the thread count
/// writes each call's result into its own slot i and combines them in index order afterwards.
/// Pre: work is safe to run concurrently for distinct i.
/// Throws: the first exception a call of work threw, once every running call has returned (no
/// call starts after it); which indices ran then is unspecified.
void for_each_index(size_t n, int num_threads, const std::function<void(size_t)>& work);

} // namespace tessera::tune
