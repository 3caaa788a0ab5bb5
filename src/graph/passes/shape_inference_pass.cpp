// Shape inference as a pipeline pass.
#include "pass_util.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph {

using namespace detail;

PassResult shape_inference_pass(Graph& g) {
    PassResult r = begin_pass("shape-inference", g);
    r.changes = infer_shapes(g);
    return end_pass(r, g, "typed " + std::to_string(r.changes) + " values");
}

} // namespace tessera::graph
