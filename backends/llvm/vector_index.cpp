#include "vector_index.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "tessera/ir/op.h"

namespace tessera::backend {

using namespace ir;

namespace {

/// The Ramp and Broadcast operands of an Add of the two, in that order, or nullptrs.
std::pair<const Ramp*, const Broadcast*> ramp_plus_broadcast(const Expr& index) {
    const Add* a = index.as<Add>();
    if (!a)
        return {nullptr, nullptr};
    if (const Ramp* r = a->a.as<Ramp>())
        return {r, a->b.as<Broadcast>()};
    return {a->b.as<Ramp>(), a->a.as<Broadcast>()};
}

int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/// The value of each of e's `lanes` lanes when e is computed from integer constants and Ramps
/// and Broadcasts of them alone; false otherwise.
bool constant_lanes(const Expr& e, int lanes, std::vector<int64_t>* out) {
    if (const int64_t* c = as_const_int(e)) {
        out->assign(static_cast<size_t>(lanes), *c);
        return true;
    }
    if (const Ramp* r = e.as<Ramp>()) {
        const int64_t* base = as_const_int(r->base);
        const int64_t* stride = as_const_int(r->stride);
        if (!base || !stride || r->lanes != lanes)
            return false;
        out->resize(static_cast<size_t>(lanes));
        for (int i = 0; i < lanes; ++i)
            (*out)[static_cast<size_t>(i)] = *base + i * *stride;
        return true;
    }
    const Expr *a = nullptr, *b = nullptr;
    auto binary = [&](const auto* node) {
        if (node) {
            a = &node->a;
            b = &node->b;
        }
        return node != nullptr;
    };
    enum { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax } op;
    if (binary(e.as<Add>()))
        op = kAdd;
    else if (binary(e.as<Sub>()))
        op = kSub;
    else if (binary(e.as<Mul>()))
        op = kMul;
    else if (binary(e.as<Div>()))
        op = kDiv;
    else if (binary(e.as<Mod>()))
        op = kMod;
    else if (binary(e.as<Min>()))
        op = kMin;
    else if (binary(e.as<Max>()))
        op = kMax;
    else
        return false;
    std::vector<int64_t> x, y;
    if (!constant_lanes(*a, lanes, &x) || !constant_lanes(*b, lanes, &y))
        return false;
    out->resize(static_cast<size_t>(lanes));
    for (size_t i = 0; i < x.size(); ++i) {
        int64_t& v = (*out)[i];
        if ((op == kDiv || op == kMod) && y[i] == 0)
            return false;
        switch (op) {
        case kAdd:
            v = x[i] + y[i];
            break;
        case kSub:
            v = x[i] - y[i];
            break;
        case kMul:
            v = x[i] * y[i];
            break;
        case kDiv:
            v = floor_div(x[i], y[i]);
            break;
        case kMod:
            v = x[i] - floor_div(x[i], y[i]) * y[i];
            break;
        case kMin:
            v = std::min(x[i], y[i]);
            break;
        case kMax:
            v = std::max(x[i], y[i]);
            break;
        }
    }
    return true;
}

/// Adds e (a vector of `lanes` lanes) to *base and *offsets with sign `sign`; false when e is
/// not a sum of broadcasts, constant-stride Ramps and constant lane terms.
bool add_terms(const Expr& e, int lanes, int64_t sign, Expr* base, std::vector<int64_t>* offsets) {
    auto add_base = [&](const Expr& v) {
        const Expr term = sign > 0 ? v : make_zero(v.type()) - v;
        *base = base->defined() ? Add::make(*base, term) : term;
    };
    if (const Add* a = e.as<Add>())
        return add_terms(a->a, lanes, sign, base, offsets) &&
               add_terms(a->b, lanes, sign, base, offsets);
    if (const Sub* s = e.as<Sub>())
        return add_terms(s->a, lanes, sign, base, offsets) &&
               add_terms(s->b, lanes, -sign, base, offsets);
    std::vector<int64_t> values;
    if (constant_lanes(e, lanes, &values)) {
        for (size_t i = 0; i < values.size(); ++i)
            (*offsets)[i] += sign * values[i];
        return true;
    }
    if (const Broadcast* b = e.as<Broadcast>()) {
        add_base(b->value);
        return true;
    }
    if (const Ramp* r = e.as<Ramp>()) {
        const int64_t* stride = as_const_int(r->stride);
        if (!stride)
            return false;
        add_base(r->base);
        for (int i = 0; i < lanes; ++i)
            (*offsets)[static_cast<size_t>(i)] += sign * i * *stride;
        return true;
    }
    return false;
}

} // namespace

Expr dense_base(const Expr& index) {
    if (const Ramp* r = index.as<Ramp>())
        return is_const_int(r->stride, 1) ? r->base : Expr();
    const auto [r, b] = ramp_plus_broadcast(index);
    if (r && b && is_const_int(r->stride, 1))
        return Add::make(r->base, b->value);
    return Expr();
}

std::pair<Expr, int64_t> strided_base(const Expr& index) {
    const Ramp* r = index.as<Ramp>();
    const Broadcast* b = nullptr;
    if (!r) {
        std::tie(r, b) = ramp_plus_broadcast(index);
        if (!b)
            r = nullptr;
    }
    const int64_t* stride = r ? as_const_int(r->stride) : nullptr;
    if (!stride || *stride == 0 || *stride == 1 ||
        std::abs(*stride) * r->lanes >= (int64_t{1} << 31))
        return {Expr(), 0};
    return {b ? Add::make(r->base, b->value) : r->base, *stride};
}

Expr uniform_index(const Expr& index) {
    if (const Broadcast* b = index.as<Broadcast>())
        return b->value;
    if (const Ramp* r = index.as<Ramp>())
        return is_const_int(r->stride, 0) ? r->base : Expr();
    return Expr();
}

std::optional<LaneOffsets> lane_offsets(const Expr& index) {
    const int lanes = index.type().lanes;
    if (lanes < 2)
        return std::nullopt;
    LaneOffsets lo;
    lo.offsets.assign(static_cast<size_t>(lanes), 0);
    if (!add_terms(index, lanes, 1, &lo.base, &lo.offsets))
        return std::nullopt;
    return lo;
}

} // namespace tessera::backend
