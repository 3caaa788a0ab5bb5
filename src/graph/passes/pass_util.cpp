#include "pass_util.h"

#include <algorithm>

namespace tessera::graph::detail {

bool is_constant_splat(const Graph& g, ValueId v, double x) {
    if (v == kNoValue || !g.value(v).is_constant())
        return false;
    const TensorData& t = *g.value(v).constant;
    if (t.dtype() == DType::Bool)
        return false;
    std::vector<double> e = t.as_f64();
    return std::all_of(e.begin(), e.end(), [x](double d) { return d == x; });
}

bool constant_scalar(const Graph& g, ValueId v, double* out) {
    if (v == kNoValue || !g.value(v).is_constant())
        return false;
    const TensorData& t = *g.value(v).constant;
    if (t.numel() != 1 || t.dtype() == DType::Bool)
        return false;
    *out = t.as_f64()[0];
    return true;
}

bool is_graph_output(const Graph& g, ValueId v) {
    return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

} // namespace tessera::graph::detail
