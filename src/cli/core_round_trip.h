// The time a cache line takes to go from one CPU of this process to another and back: what
// every value one thread writes and another reads pays, and what a parallel kernel's threads
// pay when they read each other's output. Virtual machines whose CPUs the host sometimes
// places on different dies show it as spells of a much longer round trip (a 2-core AMD EPYC
// guest: 50-60 ns, then 330-360 ns while its 2-thread runs took 40% longer).
#pragma once

#include <optional>

namespace tessera::cli {

/// The median round trip, in nanoseconds, of a cache line between this process's first two
/// allowed CPUs (two threads pinned to them pass a counter back and forth `rounds` times,
/// in 5 batches; the median batch's mean). Nothing when the process may use fewer than two
/// CPUs or cannot pin threads. Pre: rounds >= 5. Takes about rounds x the round trip.
std::optional<double> measure_core_round_trip_ns(int rounds = 100000);

} // namespace tessera::cli
