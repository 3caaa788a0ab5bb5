// Linear forms of index expressions (see index_linear_form.h).
#include "index_linear_form.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tessera/ir/functor.h"

namespace tessera::cost {

namespace {

// a + sign * b.
LinearForm combine(LinearForm a, const LinearForm& b, double sign) {
    if (a.coef.size() < b.coef.size())
        a.coef.resize(b.coef.size(), 0.0);
    for (size_t l = 0; l < b.coef.size(); ++l)
        a.coef[l] += sign * b.coef[l];
    a.constant += sign * b.constant;
    a.lane_stride += sign * b.lane_stride;
    a.lanes = std::max(a.lanes, b.lanes);
    a.exact = a.exact && b.exact;
    return a;
}

LinearForm scaled(LinearForm a, double factor) {
    for (double& c : a.coef)
        c *= factor;
    a.constant *= factor;
    a.lane_stride *= factor;
    return a;
}

bool is_constant(const LinearForm& f) {
    return f.lane_stride == 0 &&
           std::all_of(f.coef.begin(), f.coef.end(), [](double c) { return c == 0; });
}

LinearForm inexact(LinearForm f) {
    f.exact = false;
    return f;
}

} // namespace

bool LinearForm::operator==(const LinearForm& o) const {
    const size_t n = std::max({coef.size(), o.coef.size(), step.size(), o.step.size()});
    for (size_t l = 0; l < n; ++l)
        if (coef_at(l) != o.coef_at(l) || step_at(l) != o.step_at(l))
            return false;
    return constant == o.constant && lane_stride == o.lane_stride && lanes == o.lanes;
}

void LinearFormBuilder::bind(const ir::Variable* var, const ir::Expr& value) {
    LinearForm form = form_of(value);
    lets_.push_back({var, value, std::move(form)});
}

void LinearFormBuilder::measure(LinearForm& form, const ir::Expr& index,
                                const std::vector<int64_t>& mins,
                                const std::vector<int64_t>& extents) {
    if (form.exact)
        return;
    const IndexProgram base = program_of(index); // a Ramp's base
    const size_t n = loop_vars_.size();
    values_ = mins;
    const double at_min = static_cast<double>(base.run(values_));
    form.coef.assign(n, 0.0);
    form.step.assign(n, 0.0);
    for (size_t l = 0; l < n; ++l) {
        if (extents[l] <= 1)
            continue;
        values_[l] = mins[l] + 1;
        form.step[l] = static_cast<double>(base.run(values_)) - at_min;
        values_[l] = mins[l] + extents[l] - 1;
        form.coef[l] = (static_cast<double>(base.run(values_)) - at_min) / double(extents[l] - 1);
        // A periodic index (i % c) ends where it started: its average slope says nothing of
        // its span, the first step does.
        if (form.coef[l] == 0 && form.step[l] != 0)
            form.coef[l] = form.step[l];
        values_[l] = mins[l];
    }
    form.constant = at_min;
}

double LinearFormBuilder::fraction_true(const ir::Expr& condition,
                                        const std::vector<Guard>& enclosing,
                                        const std::vector<int64_t>& mins,
                                        const std::vector<int64_t>& extents) {
    // The loop levels an expression reads (directly or through Let values).
    struct LevelFinder : ir::IRVisitor {
        using ir::IRVisitor::visit;
        LinearFormBuilder* self;
        std::vector<bool> used;
        void visit(const ir::Variable* op) override {
            for (size_t l = self->loop_vars_.size(); l-- > 0;)
                if (self->loop_vars_[l] == op) {
                    used[l] = true;
                    return;
                }
            for (size_t i = self->lets_.size(); i-- > 0;)
                if (self->lets_[i].var == op)
                    return visit(self->lets_[i].value);
        }
    };
    auto levels_of = [&](const ir::Expr& e) {
        LevelFinder finder;
        finder.self = this;
        finder.used.assign(loop_vars_.size(), false);
        finder.visit(e);
        return finder.used;
    };
    std::vector<bool> used = levels_of(condition);
    // The enclosing guards that share a loop with the condition (transitively) restrict
    // where it is evaluated: the share is conditional on them.
    std::vector<const Guard*> given;
    std::vector<bool> taken(enclosing.size(), false);
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t g = 0; g < enclosing.size(); ++g) {
            if (taken[g])
                continue;
            const std::vector<bool> u = levels_of(enclosing[g].condition);
            bool shares = false;
            for (size_t l = 0; l < u.size(); ++l)
                shares = shares || (u[l] && used[l] && extents[l] > 1);
            if (!shares)
                continue;
            taken[g] = grew = true;
            given.push_back(&enclosing[g]);
            for (size_t l = 0; l < u.size(); ++l)
                used[l] = used[l] || u[l];
        }
    }

    // Guards of the form `a*x + b < c` in one loop x shrink that loop's range instead of
    // filtering points; a condition of that form in an unfiltered loop is counted exactly.
    std::vector<int64_t> lo = mins, ext = extents;
    std::vector<const Guard*> filters;
    for (const Guard* g : given) {
        size_t l = 0;
        int64_t first = 0, last = 0;
        if (!single_loop_range(g->condition, g->holds, &l, &first, &last)) {
            filters.push_back(g);
            continue;
        }
        const int64_t new_lo = std::max(lo[l], first);
        const int64_t new_hi = std::min(lo[l] + ext[l] - 1, last);
        if (new_hi < new_lo) // never true together: keep it as a filter (valid stays 0)
            filters.push_back(g);
        else
            lo[l] = new_lo, ext[l] = new_hi - new_lo + 1;
    }
    {
        size_t l = 0;
        int64_t first = 0, last = 0;
        if (filters.empty() && single_loop_range(condition, true, &l, &first, &last)) {
            const int64_t hit_lo = std::max(lo[l], first);
            const int64_t hit_hi = std::min(lo[l] + ext[l] - 1, last);
            return hit_hi < hit_lo ? 0.0 : double(hit_hi - hit_lo + 1) / double(ext[l]);
        }
    }

    std::vector<size_t> levels;
    double combinations = 1;
    for (size_t l = 0; l < loop_vars_.size(); ++l) {
        if (!used[l] || ext[l] <= 1)
            continue;
        levels.push_back(l);
        combinations *= double(ext[l]);
    }
    values_ = lo;
    int64_t holds = 0, valid = 0;
    const IndexProgram cond = program_of(condition);
    std::vector<std::pair<IndexProgram, bool>> filter_programs;
    for (const Guard* g : filters)
        filter_programs.emplace_back(program_of(g->condition), g->holds);
    auto count_point = [&] {
        for (const auto& [program, taken] : filter_programs)
            if ((program.run(values_) != 0) != taken)
                return;
        ++valid;
        holds += cond.run(values_) != 0;
    };
    if (combinations <= double(kConditionSamples)) {
        // Every combination, like an odometer.
        std::vector<int64_t> at(levels.size(), 0);
        while (true) {
            for (size_t d = 0; d < levels.size(); ++d)
                values_[levels[d]] = lo[levels[d]] + at[d];
            count_point();
            size_t d = 0;
            while (d < levels.size() && ++at[d] == ext[levels[d]])
                at[d++] = 0;
            if (d == levels.size())
                break;
        }
    } else {
        // Too many: kConditionSamples points of a low-discrepancy (R_d, additive recurrence)
        // sequence over the box. Unlike a regular grid it does not alias with the small
        // periods of fused-loop div/mod guards.
        double phi = 2.0; // the root of x^(d+1) = x + 1
        for (int it = 0; it < 30; ++it)
            phi = std::pow(1.0 + phi, 1.0 / double(levels.size() + 1));
        std::vector<double> alpha(levels.size()), u(levels.size(), 0.5);
        for (size_t d = 0; d < levels.size(); ++d)
            alpha[d] = std::fmod(std::pow(1.0 / phi, double(d + 1)), 1.0);
        for (int64_t j = 0; j < kConditionSamples; ++j) {
            for (size_t d = 0; d < levels.size(); ++d) {
                const int64_t e = ext[levels[d]];
                values_[levels[d]] = lo[levels[d]] + std::min<int64_t>(e - 1, int64_t(u[d] * e));
                u[d] += alpha[d]; // the next point: 0.5 + (j + 1) alpha, modulo 1
                if (u[d] >= 1)
                    u[d] -= 1;
            }
            count_point();
        }
    }
    // No point satisfies the enclosing guards (a sampling miss): the branch is rare; half.
    return valid > 0 ? double(holds) / double(valid) : 0.5;
}

bool LinearFormBuilder::single_loop_range(const ir::Expr& condition, bool holds, size_t* level,
                                          int64_t* first, int64_t* last) {
    using namespace ir;
    // Bring the comparison to `c*x + k <= t` (c, k from the exact form of a - b).
    Expr a, b;
    int64_t t = 0, sign = 1;
    if (const LT* op = condition.as<LT>())
        a = op->a, b = op->b, t = -1;
    else if (const LE* op = condition.as<LE>())
        a = op->a, b = op->b, t = 0;
    else if (const GT* op = condition.as<GT>())
        a = op->a, b = op->b, t = -1, sign = -1;
    else if (const GE* op = condition.as<GE>())
        a = op->a, b = op->b, t = 0, sign = -1;
    else
        return false;
    if (!a.type().is_scalar() || a.type().is_float())
        return false;
    LinearForm f = combine(form_of(a), form_of(b), -1.0);
    if (!f.exact || f.lanes > 1)
        return false;
    int found = -1;
    for (size_t l = 0; l < f.coef.size(); ++l) {
        if (f.coef[l] == 0)
            continue;
        if (found >= 0 || f.coef[l] != std::floor(f.coef[l]))
            return false;
        found = static_cast<int>(l);
    }
    if (found < 0 || f.constant != std::floor(f.constant))
        return false;
    int64_t c = sign * static_cast<int64_t>(f.coef[found]);
    int64_t k = sign * static_cast<int64_t>(f.constant);
    if (!holds) // not (c*x + k <= t)  <=>  -c*x - k <= -t - 1
        c = -c, k = -k, t = -t - 1;
    // c*x <= t - k
    const int64_t r = t - k;
    auto floor_div = [](int64_t p, int64_t q) {
        const int64_t d = p / q;
        return (p % q != 0 && ((p < 0) != (q < 0))) ? d - 1 : d;
    };
    *level = static_cast<size_t>(found);
    if (c > 0) {
        *first = std::numeric_limits<int64_t>::min() / 4;
        *last = floor_div(r, c);
    } else {
        *first = -floor_div(r, -c); // x >= ceil(r / c) with c < 0
        *last = std::numeric_limits<int64_t>::max() / 4;
    }
    return true;
}

IndexProgram LinearFormBuilder::program_of(const ir::Expr& e) const {
    return IndexProgram(
        e,
        [&](const ir::Variable* v) {
            for (size_t l = loop_vars_.size(); l-- > 0;)
                if (loop_vars_[l] == v)
                    return static_cast<int>(l);
            return -1;
        },
        [&](const ir::Variable* v) -> const ir::Expr* {
            for (size_t i = lets_.size(); i-- > 0;)
                if (lets_[i].var == v)
                    return &lets_[i].value;
            return nullptr;
        });
}

LinearForm LinearFormBuilder::form_of(const ir::Expr& e) {
    using namespace ir;
    LinearForm out;
    if (!e.defined())
        return out;
    switch (e.node_type()) {
    case IRNodeType::IntImm:
        out.constant = static_cast<double>(e.as<IntImm>()->value);
        return out;
    case IRNodeType::FloatImm:
        out.constant = e.as<FloatImm>()->value;
        return out;
    case IRNodeType::Variable: {
        const Variable* v = e.as<Variable>();
        for (size_t l = loop_vars_.size(); l-- > 0;) {
            if (loop_vars_[l] == v) {
                out.coef.assign(l + 1, 0.0);
                out.coef[l] = 1.0;
                return out;
            }
        }
        for (size_t i = lets_.size(); i-- > 0;)
            if (lets_[i].var == v)
                return lets_[i].form;
        out.exact = false; // a variable bound outside the loops we know
        return out;
    }
    case IRNodeType::Cast:
        return form_of(e.as<Cast>()->value);
    case IRNodeType::Add: {
        const Add* op = e.as<Add>();
        return combine(form_of(op->a), form_of(op->b), 1.0);
    }
    case IRNodeType::Sub: {
        const Sub* op = e.as<Sub>();
        return combine(form_of(op->a), form_of(op->b), -1.0);
    }
    case IRNodeType::Mul: {
        const Mul* op = e.as<Mul>();
        LinearForm a = form_of(op->a), b = form_of(op->b);
        if (is_constant(b))
            return scaled(std::move(a), b.constant);
        if (is_constant(a))
            return scaled(std::move(b), a.constant);
        // A product of two varying terms: keep the first's shape, mark it approximate.
        return inexact(std::move(a));
    }
    case IRNodeType::Div: {
        const Div* op = e.as<Div>();
        LinearForm a = form_of(op->a), b = form_of(op->b);
        if (is_constant(b) && b.constant != 0)
            return inexact(scaled(std::move(a), 1.0 / b.constant));
        return inexact(std::move(a));
    }
    case IRNodeType::Mod: {
        // (x % c) moves like x within a period: keep x's coefficients.
        return inexact(form_of(e.as<Mod>()->a));
    }
    case IRNodeType::Min:
        return inexact(form_of(e.as<Min>()->a));
    case IRNodeType::Max:
        return inexact(form_of(e.as<Max>()->a));
    case IRNodeType::Select:
        return inexact(form_of(e.as<Select>()->true_value));
    case IRNodeType::Ramp: {
        const Ramp* op = e.as<Ramp>();
        LinearForm base = form_of(op->base), stride = form_of(op->stride);
        base.lanes = op->lanes;
        base.lane_stride = stride.constant;
        if (!is_constant(stride))
            base.exact = false;
        return base;
    }
    case IRNodeType::Broadcast: {
        const Broadcast* op = e.as<Broadcast>();
        LinearForm v = form_of(op->value);
        v.lanes = op->lanes;
        return v;
    }
    case IRNodeType::Let: {
        const Let* op = e.as<Let>();
        bind(op->var.get(), op->value);
        LinearForm body = form_of(op->body);
        unbind();
        return body;
    }
    default:
        // Loads (indirect indices), calls, comparisons: not affine in the loops.
        out.exact = false;
        return out;
    }
}

} // namespace tessera::cost
