// `tessera hw`: what this machine is, as the compiler sees it.
#pragma once

#include <ostream>

namespace tessera::cli {

struct HwOptions {
    bool json = false; ///< One JSON object instead of text.
    /// Also measure the peak product rates (backend::measure_peak_rates), on one core and on
    /// `threads` cores at once (<= 0: every core).
    bool peak = false;
    int threads = 0;
    /// Also measure the cache-line round trip between two CPUs alone (a few milliseconds; the
    /// benchmark scripts' probe of a virtual machine's CPU placement). opts.peak measures it too.
    bool round_trip = false;
};

/// Prints the target triple, CPU, ISA features, cores and cache sizes, and with opts.peak the
/// measured peak rates ("peak_rates" in JSON: precision, instruction, one_core and all_cores in
/// operations per second, threads); with opts.peak or opts.round_trip the cache-line round
/// trip between two CPUs ("core_round_trip_ns", null with one CPU; measure_core_round_trip_ns).
void print_hw(const HwOptions& opts, std::ostream& out);

} // namespace tessera::cli
