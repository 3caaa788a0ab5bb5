// order_outer_loops_for_threads: the thread pool gives each thread one contiguous chunk of a
// parallel loop's iterations, in the order its fused loops nest. A conv nest tiled as (n, kb,
// oh, ow, k) so gives each thread a slab of output-channel blocks: each reads the whole input
// image, half of it from the other core's L2, where the previous task's other thread wrote
// it. When the activations outweigh the weights, the threads split the rows instead (one
// chunk of the row loop per core, outermost): each reads and writes about the rows it wrote
// in the previous task, and reads all the (smaller) weights. On a 2-core Rocket Lake,
// mobilenet_tiny's 1x1 conv from 32 to 64 channels at 64 x 64 ran only 1.22x faster on 2
// threads than on 1 split by channel blocks; split by rows, the model took 0.55 ms at 2
// threads instead of 0.65, resnet18 9.6 instead of 10.3.
#include <algorithm>

#include "../internal/body_util.h"
#include "../search_space/search_space_util.h"
#include "default_rules.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/te/tensor.h"

namespace tessera::sched::detail {

namespace {

/// The weights (in f32 elements: 16 KiB) small enough to stay in L1 while their blocks cycle
/// inside each row.
constexpr int64_t kMaxCycledWeightElements = 4096;

/// Where a spatial axis goes among the outer loops: rows and columns first, then the other
/// axes no weight read uses (the batch; the rows of a 1x1 conv), then the weights' axes (the
/// output channels).
enum AxisClass { kSlidesWindow = 0, kActivationOnly = 1, kWeightAxis = 2 };

/// The class of each axis of `decider`, from its reads and those of the stages of its shape
/// (its epilogue: a bias reads the output channels). An axis slides a window when an index
/// adds a reduce variable to it (oh * stride + ry).
std::vector<AxisClass> axis_classes(const State& s, const Stage& decider,
                                    const std::vector<const ir::TensorNode*>& weights) {
    const size_t n_axes = decider.axes.size();
    std::vector<bool> slides(n_axes, false), by_weight(n_axes, false);
    for (const Stage& st : s.stages) {
        if (st.is_input() || st.axes.size() != n_axes ||
            st.tensor.shape() != decider.tensor.shape())
            continue;
        std::vector<const ir::Variable*> reduce_vars;
        for (const ir::IterVar& r : st.reduce_axes())
            reduce_vars.push_back(r.var.get());
        for (const AxisRead& r : reads_by_axis(st.body, st.axes, reduce_vars)) {
            const bool weight =
                std::find(weights.begin(), weights.end(), r.tensor) != weights.end();
            for (size_t a = 0; a < n_axes; ++a) {
                by_weight[a] = by_weight[a] || (weight && r.uses[a]);
                slides[a] = slides[a] || r.slides[a];
            }
        }
    }
    std::vector<AxisClass> classes(n_axes);
    for (size_t a = 0; a < n_axes; ++a)
        classes[a] = slides[a] ? kSlidesWindow : by_weight[a] ? kWeightAxis : kActivationOnly;
    return classes;
}

/// The stage whose reads decide the order: `holder` or the first stage computed inside it
/// that reduces (a conv's register tile inside its epilogue); -1 when none does.
int deciding_stage(const State& s, int holder) {
    std::vector<int> candidates{holder};
    for (int a : s.attached_stages(holder))
        candidates.push_back(a);
    for (int c : candidates) {
        const Stage& st = s.stages[static_cast<size_t>(c)];
        if (st.has_reduce() && st.origin != StageOrigin::Rfactor)
            return c;
    }
    return -1;
}

} // namespace

void order_outer_loops_for_threads(State& s, int holder, const std::vector<int>& weight_inputs,
                                   int num_cores) {
    if (num_cores < 2)
        return;
    std::vector<const ir::TensorNode*> weights;
    int64_t weight_elements = 0, activation_elements = 0;
    bool integer_weights = false;
    for (int wi : weight_inputs)
        if (wi >= 0 && wi < static_cast<int>(s.compute.inputs.size())) {
            const ir::Tensor& w = s.compute.inputs[static_cast<size_t>(wi)];
            weights.push_back(w.get());
            weight_elements += te::num_elements(w.shape());
            integer_weights = integer_weights || w->dtype.is_int();
            // Its widened f32 view, read in its place (a weight stored in f16).
            const int wid = s.stage_id_of(w);
            const int view = wid >= 0 ? s.read_view(wid) : wid;
            if (view != wid)
                weights.push_back(s.stages[static_cast<size_t>(view)].tensor.get());
        }
    for (const ir::Tensor& t : s.compute.inputs)
        if (std::find(weights.begin(), weights.end(), t.get()) == weights.end())
            activation_elements += te::num_elements(t.shape());
    for (const ir::Tensor& t : s.compute.outputs)
        activation_elements += te::num_elements(t.shape());
    const int decider = deciding_stage(s, holder);
    if (activation_elements <= weight_elements || decider < 0)
        return;
    const Stage& h = s.stages[static_cast<size_t>(holder)];
    const Stage& d = s.stages[static_cast<size_t>(decider)];
    const size_t n_axes = d.axes.size();
    if (h.axes.size() != n_axes || h.tensor.shape() != d.tensor.shape())
        return;
    // The holder's outer loops, one per axis in order: a tiled stage's outer tile level, an
    // untiled stage's loops down to its reduction or vector loop.
    size_t n_outer = 0;
    while (n_outer < std::min(n_axes, h.iters.size()) &&
           root_axis(h, h.iters[n_outer].node) == static_cast<int>(n_outer))
        ++n_outer;
    const std::vector<AxisClass> classes = axis_classes(s, d, weights);
    // The threads split the outermost loop with more than one iteration.
    size_t first = 0;
    while (first < n_outer && h.iters[first].extent <= 1)
        ++first;
    if (first == n_outer)
        return;
    // The best-classed loop whose iterations divide evenly among the cores, if better than
    // that one. (An uneven split guards the last chunk's rows: SqueezeNet's 55 x 55 max pool
    // ran twice as long so, on one thread too.)
    int thread_axis = -1;
    for (size_t a = 0; a < n_outer; ++a) {
        const int64_t e = h.iters[a].extent;
        if (e >= num_cores && e % num_cores == 0 && classes[a] < classes[first] &&
            (thread_axis < 0 || classes[a] < classes[static_cast<size_t>(thread_axis)]))
            thread_axis = static_cast<int>(a);
    }
    if (thread_axis >= 0 && s.attached_at(holder, thread_axis).empty()) {
        // One chunk of it per core, outermost; inside a core's chunk the loops keep their
        // order (each weight block still serves all the rows of the chunk in turn).
        split(s, holder, thread_axis,
              {h.iters[static_cast<size_t>(thread_axis)].extent / num_cores});
        std::vector<int> order{thread_axis};
        const int n_loops = static_cast<int>(s.stages[static_cast<size_t>(holder)].iters.size());
        for (int k = 0; k < n_loops; ++k)
            if (k != thread_axis)
                order.push_back(k);
        reorder(s, holder, order);
        return;
    }
    // None divides evenly: the outer loops sorted by class, so that the static chunks of
    // their fused iterations still follow the rows, when the weights are small enough to be
    // read again in each row (their blocks then cycle inside each row). Without weights (a
    // pool) the channel blocks stay outside the rows: each pixel's window would otherwise
    // visit every block in turn, and a block's rows left L1 before the next pixel read them
    // again (Inception v3's 17 x 17 average pools of 48 blocks: 0.14 -> 0.05 ms hot). An
    // 8-bit conv (integer weights, 4 per word) sorts its loops whatever its weights: a pack
    // that gathers 4 of its channel blocks into each word follows it, and split by channel
    // blocks each pack read half its bytes from the other core (int8 resnet18 at 2 threads:
    // 0.061 ms per 56x56 pack, 0.004 split by rows). f32 convs keep the L1 bound: with it
    // raised to 16384, convnext_tiny and inception_v3 ran 1-2% slower.
    if (weight_elements == 0 || (weight_elements > kMaxCycledWeightElements && !integer_weights))
        return;
    std::vector<int> order;
    for (AxisClass c : {kSlidesWindow, kActivationOnly, kWeightAxis})
        for (size_t a = 0; a < n_outer; ++a)
            if (classes[a] == c)
                order.push_back(static_cast<int>(a));
    // A stage computed at one of these loops keeps its loop's place (and so its region).
    for (int a : s.attached_stages(holder)) {
        const int at = s.stages[static_cast<size_t>(a)].location.iter;
        if (at < static_cast<int>(n_outer) && order[static_cast<size_t>(at)] != at)
            return;
    }
    for (size_t k = n_outer; k < h.iters.size(); ++k)
        order.push_back(static_cast<int>(k));
    reorder(s, holder, order);
}

} // namespace tessera::sched::detail
