// Dead-code elimination: nodes that no graph output depends on.
#include "pass_util.h"

namespace tessera::graph {

using namespace detail;

PassResult eliminate_dead_code(Graph& g) {
    PassResult r = begin_pass("dce", g);
    r.changes = g.remove_dead_nodes();
    return end_pass(r, g, "removed " + std::to_string(r.changes) + " dead nodes");
}

} // namespace tessera::graph
