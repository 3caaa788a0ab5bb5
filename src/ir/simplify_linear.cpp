// The canonical linear form of integer index arithmetic and the deterministic term order.
//
// A scalar signed-integer expression built from +, - and * is read as sum(coef * monomial) +
// constant, where a monomial is a sorted product of atoms (anything else, simplified on its
// own). Terms are merged and sorted, then rebuilt in one canonical shape, so equal polynomials
// give equal expressions: `(i*4 + j) - (j + i*4)` is 0. Coefficients wrap to the type's width,
// which keeps every rewrite exact for narrow types too (these are ring identities).
#include <algorithm>
#include <cstring>

#include "reflect_pair.h"
#include "simplify_internal.h"
#include "tessera/support/error.h"

namespace tessera::ir::simplify_detail {

int64_t wrap(DataType t, uint64_t v) {
    if (t.bits >= 64) return (int64_t)v;
    int sh = 64 - t.bits;
    if (t.is_int()) return (int64_t)(v << sh) >> sh;
    return (int64_t)((v << sh) >> sh);
}

int64_t floor_div(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a); // INT64_MIN / -1 wraps
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

Stmt no_op() { return Evaluate::make(Expr(0)); }

bool is_no_op(const Stmt& s) {
    const Evaluate* e = s.as<Evaluate>();
    return e && e->value.as<IntImm>();
}

// ---------------------------------------------------------------------------------------------
// Ordering.

namespace {
template <typename T> int three_way(const T& a, const T& b) { return a < b ? -1 : (b < a ? 1 : 0); }
} // namespace

int Simplifier::order_of(const void* object) {
    return order_.emplace(object, (int)order_.size()).first->second;
}

namespace {
/// Numbers variables, buffers and tensors in order of appearance (binding sites included).
struct Numberer : IRVisitor {
    Simplifier* self;
    explicit Numberer(Simplifier* s) : self(s) {}
    using IRVisitor::visit;
    void visit(const Variable* op) override { self->order_of(op); }
    void visit(const Load* op) override {
        self->order_of(op->buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Store* op) override {
        self->order_of(op->buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Allocate* op) override {
        self->order_of(op->buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const TensorRead* op) override {
        self->order_of(op->tensor.get());
        IRVisitor::visit(op);
    }
    void visit(const For* op) override {
        self->order_of(op->loop_var.get());
        IRVisitor::visit(op);
    }
    void visit(const Let* op) override {
        self->order_of(op->var.get());
        IRVisitor::visit(op);
    }
    void visit(const LetStmt* op) override {
        self->order_of(op->var.get());
        IRVisitor::visit(op);
    }
};
} // namespace

void Simplifier::number(const Expr& e) { Numberer(this).visit(e); }
void Simplifier::number(const Stmt& s) { Numberer(this).visit(s); }

int Simplifier::binder_depth(const Variable* v, bool left) const {
    for (size_t i = binders_.size(); i-- > 0;)
        if ((left ? binders_[i].first : binders_[i].second) == v) return (int)i;
    return -1;
}

int Simplifier::compare(const Expr& a, const Expr& b) {
    // One object is one value, unless a binder inside the comparison pairs variables apart.
    if (a.same_as(b) && binders_.empty()) return 0;
    if (!a.defined() || !b.defined()) return a.defined() ? 1 : -1;
    if (a.node_type() != b.node_type())
        return three_way((int)a.node_type(), (int)b.node_type());
    DataType ta = a.type(), tb = b.type();
    if (int c = three_way((int)ta.code, (int)tb.code)) return c;
    if (int c = three_way(ta.bits, tb.bits)) return c;
    if (int c = three_way(ta.lanes, tb.lanes)) return c;
    if (const Variable* va = a.as<Variable>()) {
        const Variable* vb = b.as<Variable>();
        int da = binder_depth(va, true), db = binder_depth(vb, false);
        if (da >= 0 || db >= 0) { // bound variables first, by depth; equal when paired
            if (da < 0 || db < 0) return da < 0 ? 1 : -1;
            return three_way(da, db);
        }
        if (va == vb) return 0;
        if (int c = va->name.compare(vb->name)) return c < 0 ? -1 : 1;
        return three_way(order_of(va), order_of(vb));
    }
    switch (a.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return compare_node(static_cast<const X*>(a.get()), static_cast<const X*>(b.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "statement node in expression position";
    return 0;
}

/// Field-wise comparison for compare_node; objects by name, then by their number. (Not in an
/// anonymous namespace: the member template compare_node captures it.)
struct FieldOrder {
    Simplifier* self;
    int operator()(const Expr& a, const Expr& b) const { return self->compare(a, b); }
    int operator()(const Var&, const Var&) const { return 0; } // binding sites: see bind()
    int operator()(double a, double b) const {
        uint64_t x, y;
        std::memcpy(&x, &a, sizeof x);
        std::memcpy(&y, &b, sizeof y);
        return three_way(x, y);
    }
    int operator()(const Buffer& a, const Buffer& b) const {
        if (int c = a.name().compare(b.name())) return c < 0 ? -1 : 1;
        return three_way(self->order_of(a.get()), self->order_of(b.get()));
    }
    int operator()(const Tensor& a, const Tensor& b) const {
        if (int c = a.name().compare(b.name())) return c < 0 ? -1 : 1;
        return three_way(self->order_of(a.get()), self->order_of(b.get()));
    }
    int operator()(const IterVar&, const IterVar&) const { return 0; } // binding sites
    template <typename U> int operator()(const std::vector<U>& a, const std::vector<U>& b) const {
        if (a.size() != b.size()) return three_way(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            if (int c = (*this)(a[i], b[i])) return c;
        return 0;
    }
    int operator()(const std::string& a, const std::string& b) const {
        int c = a.compare(b);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    template <typename U> int operator()(const U& a, const U& b) const {
        static_assert(std::is_integral_v<U> || std::is_enum_v<U>, "field type without order");
        return three_way(a, b);
    }
};

/// The binding pass of compare_node: pairs the variables bound by Var and IterVar fields
/// (after comparing their types and extents); other fields compare later.
struct BindOrder {
    std::vector<std::pair<const Variable*, const Variable*>>* binders;
    int bind(const Var& a, const Var& b) const {
        DataType ta = a.type(), tb = b.type();
        if (int c = three_way((int)ta.code, (int)tb.code)) return c;
        if (int c = three_way(ta.bits, tb.bits)) return c;
        if (int c = three_way(ta.lanes, tb.lanes)) return c;
        binders->push_back({a.get(), b.get()});
        return 0;
    }
    int operator()(const Var& a, const Var& b) const { return bind(a, b); }
    int operator()(const std::vector<IterVar>& a, const std::vector<IterVar>& b) const {
        if (a.size() != b.size()) return three_way(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
            if (int c = three_way(a[i].extent, b[i].extent)) return c;
            if (int c = bind(a[i].var, b[i].var)) return c;
        }
        return 0;
    }
    template <typename U> int operator()(const U&, const U&) const { return 0; }
};

template <typename T> int Simplifier::compare_node(const T* a, const T* b) {
    size_t mark = binders_.size();
    int result = 0;
    BindOrder binding{&binders_};
    detail::reflect_pair(*a, *b, [&](const char*, const auto& fa, const auto& fb) {
        if (result == 0) result = binding(fa, fb);
    });
    FieldOrder order{this};
    detail::reflect_pair(*a, *b, [&](const char*, const auto& fa, const auto& fb) {
        if (result == 0) result = order(fa, fb);
    });
    binders_.resize(mark);
    return result;
}

int Simplifier::compare_terms(const Term& a, const Term& b) {
    size_t n = std::min(a.atoms.size(), b.atoms.size());
    for (size_t i = 0; i < n; ++i)
        if (int c = compare(a.atoms[i], b.atoms[i])) return c;
    return three_way(a.atoms.size(), b.atoms.size());
}

// ---------------------------------------------------------------------------------------------
// Linear forms.

LinearForm Simplifier::linearize(const Expr& e, bool simplified) {
    DataType t = e.type();
    if (const IntImm* imm = e.as<IntImm>()) return {t, {}, imm->value};
    if (const Add* op = e.as<Add>())
        return add(linearize(op->a, simplified), linearize(op->b, simplified));
    if (const Sub* op = e.as<Sub>())
        return add(linearize(op->a, simplified), linearize(op->b, simplified), true);
    if (const Mul* op = e.as<Mul>())
        return mul(linearize(op->a, simplified), linearize(op->b, simplified));
    Expr atom = e;
    if (!simplified) {
        atom = mutate(e);
        if (atom.as<IntImm>() || atom.as<Add>() || atom.as<Sub>() || atom.as<Mul>())
            return linearize(atom, true);
    }
    return {t, {Term{{atom}, 1}}, 0};
}

void Simplifier::normalize(LinearForm& f) {
    std::sort(f.terms.begin(), f.terms.end(),
              [this](const Term& a, const Term& b) { return compare_terms(a, b) < 0; });
    std::vector<Term> merged;
    for (Term& t : f.terms) {
        if (!merged.empty() && compare_terms(merged.back(), t) == 0)
            merged.back().coef = wrap(f.type, (uint64_t)merged.back().coef + (uint64_t)t.coef);
        else
            merged.push_back(std::move(t));
    }
    f.terms.clear();
    for (Term& t : merged)
        if (t.coef != 0) f.terms.push_back(std::move(t));
    recombine_div_mod(f);
}

// x - y has every coefficient and its constant a multiple of c: y % c is x % c (floor).
bool Simplifier::congruent_mod(const Expr& x, const Expr& y, int64_t c) {
    const LinearForm d = add(linearize(x, true), linearize(y, true), /*negate_b=*/true);
    if (d.constant % c != 0)
        return false;
    for (const Term& t : d.terms)
        if (t.coef % c != 0)
            return false;
    return true;
}

// k*c*(x / c) + k*(x % c) is k*x, for floor or truncating division alike (c != 0): a fused
// loop's parts, (f / 4)*4 + f % 4 in an NCHW[4]c store vectorized across pixels and channels,
// become the fused variable again, so the store is one dense vector. The modulo's operand
// may be congruent to the quotient's instead of equal (floor semantics): simplifying x % c
// reduces x's coefficients modulo c first, so (16a + b) % 3 is already (a + b) % 3 here.
void Simplifier::recombine_div_mod(LinearForm& f) {
    for (size_t m = 0; m < f.terms.size(); ++m) {
        const Mod* mod = f.terms[m].atoms.size() == 1 ? f.terms[m].atoms[0].as<Mod>() : nullptr;
        const IntImm* c = mod ? mod->b.as<IntImm>() : nullptr;
        if (!c || c->value == 0)
            continue;
        const int64_t k = f.terms[m].coef;
        for (size_t d = 0; d < f.terms.size(); ++d) {
            const Div* div = f.terms[d].atoms.size() == 1 ? f.terms[d].atoms[0].as<Div>() : nullptr;
            if (!div || !same(div->b, mod->b) ||
                f.terms[d].coef != wrap(f.type, (uint64_t)k * (uint64_t)c->value) ||
                !(same(div->a, mod->a) ||
                  (div->a.type() == mod->a.type() && is_linear_type(div->a.type()) &&
                   congruent_mod(div->a, mod->a, c->value))))
                continue;
            const Expr x = div->a;
            LinearForm rest{f.type, {}, f.constant};
            for (size_t i = 0; i < f.terms.size(); ++i)
                if (i != m && i != d)
                    rest.terms.push_back(f.terms[i]);
            f = add(rest, scale(linearize(x, true), k)); // normalizes again
            return;
        }
    }
}

LinearForm Simplifier::add(LinearForm a, const LinearForm& b, bool negate_b) {
    for (const Term& t : b.terms)
        a.terms.push_back({t.atoms, negate_b ? wrap(a.type, 0 - (uint64_t)t.coef) : t.coef});
    uint64_t c = negate_b ? 0 - (uint64_t)b.constant : (uint64_t)b.constant;
    a.constant = wrap(a.type, (uint64_t)a.constant + c);
    normalize(a);
    return a;
}

LinearForm Simplifier::scale(LinearForm a, int64_t c) {
    for (Term& t : a.terms) t.coef = wrap(a.type, (uint64_t)t.coef * (uint64_t)c);
    a.constant = wrap(a.type, (uint64_t)a.constant * (uint64_t)c);
    normalize(a);
    return a;
}

LinearForm Simplifier::mul(const LinearForm& a, const LinearForm& b) {
    if (a.terms.empty()) return scale(b, a.constant);
    if (b.terms.empty()) return scale(a, b.constant);
    const LinearForm* single = nullptr;
    const LinearForm* other = nullptr;
    if (a.terms.size() == 1 && a.constant == 0) single = &a, other = &b;
    else if (b.terms.size() == 1 && b.constant == 0) single = &b, other = &a;
    LinearForm r{a.type, {}, 0};
    if (!single) {
        // A product of two sums stays one opaque atom (expanding could blow up); its factors
        // are canonical and ordered, so equal products still merge.
        Expr x = rebuild(a), y = rebuild(b);
        if (compare(y, x) < 0) std::swap(x, y);
        r.terms.push_back({{Mul::make(x, y)}, 1});
        return r;
    }
    const Term& s = single->terms[0];
    auto product = [&](const Term& t) {
        Term p{s.atoms, wrap(a.type, (uint64_t)s.coef * (uint64_t)t.coef)};
        p.atoms.insert(p.atoms.end(), t.atoms.begin(), t.atoms.end());
        std::sort(p.atoms.begin(), p.atoms.end(),
                  [this](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
        return p;
    };
    for (const Term& t : other->terms) r.terms.push_back(product(t));
    if (other->constant != 0) r.terms.push_back(product(Term{{}, other->constant}));
    normalize(r);
    return r;
}

Expr Simplifier::rebuild(LinearForm f) {
    normalize(f);
    DataType t = f.type;
    int64_t type_min = wrap(t, uint64_t{1} << (t.bits - 1));
    auto term_expr = [&](const Term& term, int64_t coef) {
        Expr m = term.atoms[0];
        for (size_t i = 1; i < term.atoms.size(); ++i) m = Mul::make(m, term.atoms[i]);
        return coef == 1 ? m : Mul::make(m, IntImm::make(t, coef));
    };
    Expr r;
    // Adds a term; a negative one (not the type's minimum) is subtracted as its magnitude.
    auto append = [&](const Term& term) {
        if (!r.defined()) r = term_expr(term, term.coef);
        else if (term.coef < 0 && term.coef != type_min)
            r = Sub::make(r, term_expr(term, wrap(t, 0 - (uint64_t)term.coef)));
        else r = Add::make(r, term_expr(term, term.coef));
    };
    bool any_positive = false;
    for (const Term& term : f.terms) any_positive = any_positive || term.coef > 0;
    if (!any_positive && !f.terms.empty() && f.constant != 0) {
        r = IntImm::make(t, f.constant); // `5 - x` rather than `x*-1 + 5`
        f.constant = 0;
    }
    for (const Term& term : f.terms)
        if (term.coef > 0) append(term);
    for (const Term& term : f.terms)
        if (term.coef < 0) append(term);
    if (!r.defined()) return IntImm::make(t, f.constant);
    if (f.constant < 0 && f.constant != type_min)
        r = Sub::make(r, IntImm::make(t, wrap(t, 0 - (uint64_t)f.constant)));
    else if (f.constant != 0) r = Add::make(r, IntImm::make(t, f.constant));
    return r;
}

Expr Simplifier::linear_visit(const Expr& e) {
    Expr r = rebuild(linearize(e, false));
    return same(r, e) ? e : r;
}

} // namespace tessera::ir::simplify_detail
