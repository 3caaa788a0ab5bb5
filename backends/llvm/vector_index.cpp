#include "vector_index.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
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
    // Each binary op lane by lane; division and remainder by 0 leave the lanes unknown.
    using Lane = std::optional<int64_t>;
    const auto both = [&](const auto* n, Lane (*fold)(int64_t, int64_t)) {
        std::vector<int64_t> x, y;
        if (!constant_lanes(n->a, lanes, &x) || !constant_lanes(n->b, lanes, &y))
            return false;
        out->resize(static_cast<size_t>(lanes));
        for (size_t i = 0; i < x.size(); ++i) {
            const Lane v = fold(x[i], y[i]);
            if (!v)
                return false;
            (*out)[i] = *v;
        }
        return true;
    };
    if (const Add* n = e.as<Add>())
        return both(n, [](int64_t x, int64_t y) -> Lane { return x + y; });
    if (const Sub* n = e.as<Sub>())
        return both(n, [](int64_t x, int64_t y) -> Lane { return x - y; });
    if (const Mul* n = e.as<Mul>())
        return both(n, [](int64_t x, int64_t y) -> Lane { return x * y; });
    if (const Div* n = e.as<Div>())
        return both(n, [](int64_t x, int64_t y) -> Lane {
            return y == 0 ? Lane() : Lane(floor_div(x, y));
        });
    if (const Mod* n = e.as<Mod>())
        return both(n, [](int64_t x, int64_t y) -> Lane {
            return y == 0 ? Lane() : Lane(x - floor_div(x, y) * y);
        });
    if (const Min* n = e.as<Min>())
        return both(n, [](int64_t x, int64_t y) -> Lane { return std::min(x, y); });
    if (const Max* n = e.as<Max>())
        return both(n, [](int64_t x, int64_t y) -> Lane { return std::max(x, y); });
    return false;
}

/// A positive integer that scalar e is known to be a multiple of (its terms' constant factors:
/// 8 for i * 224 + j * 8), or 0 when e is the constant 0.
int64_t known_multiple(const Expr& e) {
    if (const int64_t* c = as_const_int(e))
        return std::abs(*c);
    if (const Add* a = e.as<Add>())
        return std::gcd(known_multiple(a->a), known_multiple(a->b));
    if (const Sub* s = e.as<Sub>())
        return std::gcd(known_multiple(s->a), known_multiple(s->b));
    if (const Mul* m = e.as<Mul>())
        return known_multiple(m->a) * known_multiple(m->b);
    return 1;
}

bool add_terms(const Expr& e, int lanes, int64_t sign, Expr* base, std::vector<int64_t>* offsets);

/// e as a scalar base (undefined: 0) plus constant lane offsets, or nullopt.
std::optional<LaneOffsets> split_lanes(const Expr& e, int lanes) {
    LaneOffsets lo;
    lo.offsets.assign(static_cast<size_t>(lanes), 0);
    if (!add_terms(e, lanes, 1, &lo.base, &lo.offsets))
        return std::nullopt;
    return lo;
}

/// num / c or num % c (floor) as a scalar base plus constant lane offsets, for a constant c > 0
/// and num = B + o[lane]: when the offsets are all equal (B + o is then scalar); when B is a
/// multiple of c (B / c + o / c, o % c); or when B is a multiple of some d that divides c and
/// every offset lies in [0, d), so that no lane crosses a multiple of c (B / c, B % c + o).
std::optional<LaneOffsets> split_div_mod(const Expr& num, int64_t c, bool mod, int lanes) {
    std::optional<LaneOffsets> in = split_lanes(num, lanes);
    if (!in || c <= 0)
        return std::nullopt;
    const std::vector<int64_t>& o = in->offsets;
    const auto [lo, hi] = std::minmax_element(o.begin(), o.end());
    LaneOffsets out;
    out.offsets.assign(o.size(), 0);
    const DataType t = num.type().element_of();
    const Expr B = in->base.defined() ? in->base : make_zero(t);
    const Expr cc = make_const(t, c);
    if (*lo == *hi) {
        const Expr x = *lo == 0 ? B : B + make_const(t, *lo);
        out.base = mod ? x % cc : x / cc;
        return out;
    }
    const int64_t d = known_multiple(B);
    if (d != 0 && d % c == 0) {
        out.base = mod ? Expr() : B / cc;
        for (size_t i = 0; i < o.size(); ++i)
            out.offsets[i] = mod ? o[i] - floor_div(o[i], c) * c : floor_div(o[i], c);
        return out;
    }
    if (d == 0 || c % d != 0 || *lo < 0 || *hi >= d)
        return std::nullopt;
    out.base = mod ? B % cc : B / cc;
    if (mod)
        out.offsets = o;
    return out;
}

/// Adds e (a vector of `lanes` lanes) to *base and *offsets with sign `sign`; false when e is
/// not a sum of broadcasts, constant-stride Ramps, constant lane terms, and products, floor
/// quotients and remainders of such sums by constants that split_div_mod can keep so.
bool add_terms(const Expr& e, int lanes, int64_t sign, Expr* base, std::vector<int64_t>* offsets) {
    auto add_base = [&](const Expr& v) {
        const Expr term = sign > 0 ? v : make_zero(v.type()) - v;
        *base = base->defined() ? Add::make(*base, term) : term;
    };
    auto add_split = [&](const LaneOffsets& lo, int64_t scale) {
        if (lo.base.defined())
            add_base(scale == 1 ? lo.base : lo.base * make_const(lo.base.type(), scale));
        for (size_t i = 0; i < lo.offsets.size(); ++i)
            (*offsets)[i] += sign * scale * lo.offsets[i];
        return true;
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
    if (const Mul* m = e.as<Mul>()) {
        const int64_t* c = as_const_int(m->b);
        const Expr* x = &m->a;
        if (!c) {
            c = as_const_int(m->a);
            x = &m->b;
        }
        const std::optional<LaneOffsets> lo = c ? split_lanes(*x, lanes) : std::nullopt;
        return lo && add_split(*lo, *c);
    }
    const bool div = e.as<Div>() != nullptr, mod = e.as<Mod>() != nullptr;
    if (div || mod) {
        const Expr& num = div ? e.as<Div>()->a : e.as<Mod>()->a;
        const int64_t* c = as_const_int(div ? e.as<Div>()->b : e.as<Mod>()->b);
        const std::optional<LaneOffsets> lo = c ? split_div_mod(num, *c, mod, lanes) : std::nullopt;
        return lo && add_split(*lo, 1);
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
    return split_lanes(index, lanes);
}

std::optional<LoadWindows> load_windows(const std::vector<int64_t>& offsets, int lanes) {
    std::vector<int> order(offsets.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return offsets[static_cast<size_t>(a)] < offsets[static_cast<size_t>(b)];
    });
    LoadWindows w;
    w.window.assign(offsets.size(), 0);
    for (int lane : order) {
        const int64_t o = offsets[static_cast<size_t>(lane)];
        if (w.first.empty() || o - w.first.back() >= lanes) {
            w.first.push_back(o);
            w.last.push_back(o);
        }
        w.last.back() = o;
        w.window[static_cast<size_t>(lane)] = static_cast<int>(w.first.size()) - 1;
    }
    if (static_cast<int>(w.first.size()) > std::max(2, lanes / 4))
        return std::nullopt;
    return w;
}

} // namespace tessera::backend
