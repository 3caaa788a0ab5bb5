// count_flops: float arithmetic per stage element, times the elements (see flops.h).
#include "tessera/te/flops.h"

#include "tessera/ir/functor.h"

namespace tessera::te {

namespace {

// Counts float arithmetic nodes of one expression (not looking into other tensors).
class FloatOpCounter : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;
    int64_t count = 0;

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
        if (op->op != ir::CallOp::Dot2BF16)
            return arith(op);
        count += 3; // two products and their sum: a bf16 matmul counts 2*M*N*K as an f32 one
        visit_children(op);
    }
};

int64_t float_ops(const Expr& e) {
    FloatOpCounter c;
    c.visit(e);
    return c.count;
}

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
            per_element = (float_ops(r->source) + (r->type.is_float() ? 1 : 0)) * extent;
        } else {
            per_element = float_ops(body);
        }
        total += per_element * num_elements(t->shape);
    }
    return total;
}

} // namespace tessera::te
