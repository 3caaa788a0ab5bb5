// Ranking quality of cost-model predictions against measurements (cost_model.h).
#include "tessera/cost_model/cost_model.h"

#include "tessera/support/error.h"

#include <algorithm>
#include <map>

namespace tessera::cost {

RankingQuality ranking_quality(const std::vector<TrainingExample>& examples,
                               const std::vector<double>& predictions) {
    TESSERA_CHECK(predictions.size() == examples.size())
        << predictions.size() << " predictions for " << examples.size() << " examples";
    // std::map: tasks in name order, so sums are taken in a platform-independent order.
    std::map<std::string, std::vector<size_t>> by_task;
    for (size_t i = 0; i < examples.size(); ++i)
        by_task[examples[i].task].push_back(i);

    RankingQuality q;
    double agreeing = 0;
    const int ks[3] = {1, 5, 32};
    double peak_sum[3] = {0, 0, 0};
    for (const auto& [task, idx] : by_task) {
        for (size_t a = 0; a < idx.size(); ++a) {
            for (size_t b = a + 1; b < idx.size(); ++b) {
                double dy =
                    examples[idx[a]].normalized_throughput - examples[idx[b]].normalized_throughput;
                if (dy == 0)
                    continue;
                double dp = predictions[idx[a]] - predictions[idx[b]];
                ++q.num_pairs;
                // A tie in prediction orders neither way: half credit, so a constant model
                // scores 0.5 like a coin, not 0.
                agreeing += dp == 0 ? 0.5 : (dp > 0) == (dy > 0) ? 1.0 : 0.0;
            }
        }
        double best = 0;
        for (size_t i : idx)
            best = std::max(best, examples[i].normalized_throughput);
        if (best <= 0)
            continue; // only error records: nothing to find
        ++q.num_tasks;
        // The model's order: by prediction, highest first; ties keep the input order.
        std::vector<size_t> order = idx;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return predictions[a] > predictions[b]; });
        for (int k = 0; k < 3; ++k) {
            double found = 0;
            size_t n = std::min<size_t>(order.size(), static_cast<size_t>(ks[k]));
            for (size_t i = 0; i < n; ++i)
                found = std::max(found, examples[order[i]].normalized_throughput);
            peak_sum[k] += found / best;
        }
    }
    if (q.num_pairs > 0)
        q.pairwise_accuracy = agreeing / static_cast<double>(q.num_pairs);
    if (q.num_tasks > 0) {
        q.peak_score_at_1 = peak_sum[0] / q.num_tasks;
        q.peak_score_at_5 = peak_sum[1] / q.num_tasks;
        q.peak_score_at_32 = peak_sum[2] / q.num_tasks;
    }
    return q;
}

} // namespace tessera::cost
