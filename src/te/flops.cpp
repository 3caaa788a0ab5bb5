// count_flops: the arithmetic of each stage element (float, and the 8-bit integer dot products),
// times the elements (see flops.h).
#include "tessera/te/flops.h"

#include "tessera/ir/functor.h"

namespace tessera::te {

namespace {

// Counts float arithmetic nodes of one expression (not looking into other tensors), and the
// multiply-adds of its 8-bit dot products.
class OpCounter : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;
    int64_t count = 0;
    /// Whether the expression has a dot4_u8s8: its integer sum is the products' accumulation.
    bool integer_dot = false;

  private:
    template <typename T> void arith(const T* op) {
        if (op->type.is_float())
            ++count;
        visit_children(op);
    }
    void visit(const ir::Add* op) override { arith(op); }
    void visit(const ir::Sub* op) override { arith(op); }
    void visit(const ir::Mul* op) override { arith(op); }
    void visit(const ir::Div* op) override { arith(op); }
    void visit(const ir::Min* op) override { arith(op); }
    void visit(const ir::Max* op) override { arith(op); }
    void visit(const ir::Call* op) override {
        if (op->op == ir::CallOp::Dot2BF16) {
            count += 3; // two products and their sum: a bf16 matmul counts 2*M*N*K as an f32 one
        } else if (op->op == ir::CallOp::Dot4U8S8) {
            // Four products and three sums; the integer reduction adds the fourth sum, so an
            // 8-bit conv counts two operations per multiply-add as an f32 one. Counted as 0, an
            // int8 resnet18 weighed 0.023 GFLOP (its epilogues) and the task scheduler compared
            // its convs by their epilogues' sizes.
            count += 7;
            integer_dot = true;
        } else {
            return arith(op);
        }
        visit_children(op);
    }
};

} // namespace

int64_t count_flops(const Compute& c) {
    int64_t total = 0;
    for (const Tensor& t : c.stages) {
        const Expr& body = t->body;
        int64_t per_element = 0;
        if (const ir::Reduce* r = body.as<ir::Reduce>()) {
            int64_t extent = 1;
            for (const ir::IterVar& a : r->axes)
                extent *= a.extent;
            OpCounter source;
            source.visit(r->source);
            const bool combine_counts = r->type.is_float() || source.integer_dot;
            per_element = (source.count + (combine_counts ? 1 : 0)) * extent;
        } else {
            OpCounter ops;
            ops.visit(body);
            per_element = ops.count;
        }
        total += per_element * num_elements(t->shape);
    }
    return total;
}

} // namespace tessera::te
