// The ratios of timed pairs (a candidate's run over the baseline's run beside it) and what the
// measurement's rules read of them: the worker's early ends of timing (measure.h's
// behind_factor and ratio_precision) and the tuner's proof that a new best beats its baseline
// (tune_task.h). Its own header so that the measurement worker, also built alone for other
// architectures, needs nothing else of the tuner.
#pragma once

#include <vector>

namespace tessera::tune {

/// The ratios a[i] / b[i] of timed pairs, sorted.
struct PairRatios {
    std::vector<double> sorted;
    /// Pre: a and b of one nonzero size, b's elements above 0.
    PairRatios(const std::vector<double>& a, const std::vector<double>& b);
    /// The ratio at quantile p in [0, 1]: the one at index floor(p x count), clamped (the
    /// upper of the two middle ones for an even count).
    double quantile(double p) const;
    double median() const { return quantile(0.5); }
    /// The median's standard error relative to it, estimated as the interquartile range over
    /// the square root of the count (for normal noise the median's error is 0.93 times that).
    double relative_error() const;
    /// The sign test's p-value of "the first kernel is faster": were both equally fast (each
    /// pair's order a fair coin), the chance that at least as many pairs as measured would
    /// have a ratio below 1. Unlike relative_error, it cannot be fooled by a spread that a
    /// few pairs happened to leave narrow.
    double sign_test_p() const;
};

} // namespace tessera::tune
