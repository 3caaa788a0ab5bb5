// Alpha-equivalent structural equality and hashing, generic over the nodes' reflect() lists.
#include "tessera/ir/equality.h"

#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "reflect_pair.h"
#include "tessera/support/error.h"
#include "tessera/support/hash.h"

namespace tessera::ir {

namespace {

/// Pairs objects of the two sides one-to-one, on first encounter. Pointers are lookup keys only.
class Bijection {
public:
    /// True when a and b are paired (pairing them now if neither is paired yet); *fresh tells
    /// whether the pair was just made.
    bool match(const void* a, const void* b, bool* fresh = nullptr) {
        auto fa = fwd_.find(a);
        auto fb = bwd_.find(b);
        if (fresh) *fresh = false;
        if (fa == fwd_.end() && fb == bwd_.end()) {
            fwd_.emplace(a, b);
            bwd_.emplace(b, a);
            if (fresh) *fresh = true;
            return true;
        }
        return fa != fwd_.end() && fb != bwd_.end() && fa->second == b;
    }

private:
    std::unordered_map<const void*, const void*> fwd_, bwd_;
};

class Comparer {
public:
    bool expr(const Expr& a, const Expr& b) {
        if (!a.defined() || !b.defined()) return a.defined() == b.defined();
        if (a.node_type() != b.node_type() || a.type() != b.type()) return false;
        if (const Variable* va = a.as<Variable>()) return vars_.match(va, b.get());
        switch (a.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return node(static_cast<const X*>(a.get()), static_cast<const X*>(b.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        TESSERA_UNREACHABLE() << "statement node in expression position";
        return false;
    }

    bool stmt(const Stmt& a, const Stmt& b) {
        if (!a.defined() || !b.defined()) return a.defined() == b.defined();
        if (a.node_type() != b.node_type()) return false;
        switch (a.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return node(static_cast<const X*>(a.get()), static_cast<const X*>(b.get()));
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        TESSERA_UNREACHABLE() << "expression node in statement position";
        return false;
    }

    bool buffer(const Buffer& a, const Buffer& b) {
        if (!a.defined() || !b.defined()) return a.defined() == b.defined();
        return a.dtype() == b.dtype() && a.shape() == b.shape() && buffers_.match(a.get(), b.get());
    }

    bool tensor(const Tensor& a, const Tensor& b) {
        if (!a.defined() || !b.defined()) return a.defined() == b.defined();
        if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
        bool fresh = false;
        if (!tensors_.match(a.get(), b.get(), &fresh)) return false;
        if (!fresh) return true; // compared (or being compared) already
        const TensorNode& x = *a.get();
        const TensorNode& y = *b.get();
        return field(x.axes, y.axes) && expr(x.body, y.body);
    }

private:
    Bijection vars_, buffers_, tensors_;

    template <typename T> bool node(const T* a, const T* b) {
        bool eq = true;
        detail::reflect_pair(*a, *b, [&](const char*, const auto& fa, const auto& fb) {
            eq = eq && field(fa, fb);
        });
        return eq;
    }

    bool field(const Expr& a, const Expr& b) { return expr(a, b); }
    bool field(const Var& a, const Var& b) { return expr(a, b); }
    bool field(const Stmt& a, const Stmt& b) { return stmt(a, b); }
    bool field(const Buffer& a, const Buffer& b) { return buffer(a, b); }
    bool field(const Tensor& a, const Tensor& b) { return tensor(a, b); }
    bool field(const IterVar& a, const IterVar& b) {
        return a.extent == b.extent && expr(a.var, b.var);
    }
    bool field(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
    /// Names (Variable::name) are hints, never compared.
    bool field(const std::string&, const std::string&) { return true; }
    template <typename U> bool field(const std::vector<U>& a, const std::vector<U>& b) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i)
            if (!field(a[i], b[i])) return false;
        return true;
    }
    /// Integers and our enums.
    template <typename U> bool field(const U& a, const U& b) {
        static_assert(std::is_integral_v<U> || std::is_enum_v<U>, "field type without comparison");
        return a == b;
    }
};

/// Per-kind seed: the hash of the node kind's name, so enum reordering changes nothing.
uint64_t kind_seed(IRNodeType t) {
    static const auto* table = [] {
        static uint64_t seeds[256];
#define TESSERA_EXPR_NODE(X) seeds[(int)IRNodeType::X] = hash_string(#X);
#define TESSERA_STMT_NODE(X) seeds[(int)IRNodeType::X] = hash_string(#X);
#include "tessera/ir/ir_nodes.def"
        return seeds;
    }();
    return table[(int)t];
}

class Hasher {
public:
    uint64_t h = 0x7e55e7a0c0ffee11ULL;

    void mix(uint64_t v) { h = hash_combine(h, v); }
    void type(DataType t) {
        mix((uint64_t)t.code);
        mix(t.bits);
        mix(t.lanes);
    }

    void expr(const Expr& e) {
        if (!e.defined()) return mix(kUndefined);
        mix(kind_seed(e.node_type()));
        type(e.type());
        if (e.as<Variable>()) return mix(index_of(vars_, e.get()));
        switch (e.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return node(static_cast<const X*>(e.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        TESSERA_UNREACHABLE() << "statement node in expression position";
    }

    void stmt(const Stmt& s) {
        if (!s.defined()) return mix(kUndefined);
        mix(kind_seed(s.node_type()));
        switch (s.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return node(static_cast<const X*>(s.get()));
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        TESSERA_UNREACHABLE() << "expression node in statement position";
    }

    void buffer(const Buffer& b) {
        if (!b.defined()) return mix(kUndefined);
        type(b.dtype());
        field(b.shape());
        mix(index_of(buffers_, b.get()));
    }

    void tensor(const Tensor& t) {
        if (!t.defined()) return mix(kUndefined);
        type(t.dtype());
        field(t.shape());
        size_t seen = tensors_.size();
        mix(index_of(tensors_, t.get()));
        if (tensors_.size() == seen) return; // definition hashed at first occurrence
        field(t.get()->axes);
        expr(t.get()->body);
    }

private:
    static constexpr uint64_t kUndefined = 0x5eed0fdeadbeefULL;
    std::unordered_map<const void*, uint64_t> vars_, buffers_, tensors_;

    static uint64_t index_of(std::unordered_map<const void*, uint64_t>& m, const void* p) {
        return m.emplace(p, m.size()).first->second;
    }

    template <typename T> void node(const T* op) {
        T::reflect(*op, [&](const char*, const auto& f) { field(f); });
    }

    void field(const Expr& e) { expr(e); }
    void field(const Var& v) { expr(v); }
    void field(const Stmt& s) { stmt(s); }
    void field(const Buffer& b) { buffer(b); }
    void field(const Tensor& t) { tensor(t); }
    void field(const IterVar& iv) {
        expr(iv.var);
        mix((uint64_t)iv.extent);
    }
    void field(double d) { mix(hash_double(d)); }
    void field(const std::string&) {} // names are hints
    template <typename U> void field(const std::vector<U>& v) {
        mix(v.size());
        for (const auto& x : v) field(x);
    }
    template <typename U> void field(const U& x) {
        static_assert(std::is_integral_v<U> || std::is_enum_v<U>, "field type without hash");
        mix((uint64_t)x);
    }
};

} // namespace

bool structural_equal(const Expr& a, const Expr& b) { return Comparer().expr(a, b); }
bool structural_equal(const Stmt& a, const Stmt& b) { return Comparer().stmt(a, b); }
bool structural_equal(const Tensor& a, const Tensor& b) { return Comparer().tensor(a, b); }

bool structural_equal(const LoweredFunc& a, const LoweredFunc& b) {
    if (a.name != b.name || a.params.size() != b.params.size()) return false;
    Comparer c;
    for (size_t i = 0; i < a.params.size(); ++i)
        if (!c.buffer(a.params[i], b.params[i])) return false;
    return c.stmt(a.body, b.body);
}

uint64_t structural_hash(const Expr& e) {
    Hasher h;
    h.expr(e);
    return h.h;
}

uint64_t structural_hash(const Stmt& s) {
    Hasher h;
    h.stmt(s);
    return h.h;
}

uint64_t structural_hash(const Tensor& t) {
    Hasher h;
    h.tensor(t);
    return h.h;
}

uint64_t structural_hash(const LoweredFunc& f) {
    Hasher h;
    h.mix(hash_string(f.name));
    h.mix(f.params.size());
    for (const Buffer& b : f.params) h.buffer(b);
    h.stmt(f.body);
    return h.h;
}

} // namespace tessera::ir
