// The operator table: one entry per op of ops.def, in enum order.
#include "op_def.h"

#include <iterator>

#include "tessera/support/error.h"

namespace tessera::graph::detail {

namespace {

const OpDef* const kTable[] = {
#define TESSERA_GRAPH_OP(Name) &ops::Name,
#include "tessera/graph/ops.def"
#undef TESSERA_GRAPH_OP
};

} // namespace

const OpDef& op_def(Op op) {
    const size_t i = static_cast<size_t>(op);
    TESSERA_CHECK(i < std::size(kTable)) << "op " << i << " is outside the table";
    const OpDef& d = *kTable[i];
    TESSERA_CHECK(d.op == op && d.infer && d.evaluate)
        << "the table entry of " << op_name(op) << " is incomplete";
    return d;
}

} // namespace tessera::graph::detail
