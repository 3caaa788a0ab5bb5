// perfect_nest: the loops, Lets and innermost statement of a perfect loop nest.
#include "perfect_nest.h"

#include "tessera/ir/simplify.h"
#include "tessera/support/error.h"

namespace tessera::lower::detail {

using namespace ir;

PerfectNest perfect_nest(const For* root, const std::string& what) {
    PerfectNest nest;
    Stmt s(root);
    while (true) {
        if (const For* f = s.as<For>()) {
            const std::string loop = "loop '" + f->loop_var.name() + "'";
            if (f->kind != ForKind::Serial && f->kind != ForKind::Unrolled && f != root)
                throw ScheduleError(what + ": " + loop + " is " + to_string(f->kind));
            // The simplified bounds stay held here: as<> points into them.
            const Expr min_expr = simplify(nest.subs.mutate(f->min));
            const Expr extent_expr = simplify(nest.subs.mutate(f->extent));
            const IntImm* min = min_expr.as<IntImm>();
            const IntImm* extent = extent_expr.as<IntImm>();
            if (!min || min->value != 0 || !extent)
                throw ScheduleError(what + ": " + loop + " does not run a constant count from 0");
            if (extent->value == 1)
                nest.subs.values[f->loop_var.get()] = Expr(int64_t(0));
            else
                nest.loops.push_back({f->loop_var, extent->value});
            s = f->body;
        } else if (const LetStmt* l = s.as<LetStmt>()) {
            nest.subs.values[l->var.get()] = nest.subs.mutate(l->value);
            s = l->body;
        } else {
            nest.body = s;
            return nest;
        }
    }
}

void set_coefficients(std::vector<NestLoop>& loops, const Expr& ic, const Expr& ia, const Expr& ib,
                      const std::string& what) {
    for (NestLoop& l : loops) {
        auto c = coefficient(ic, l.var), a = coefficient(ia, l.var), b = coefficient(ib, l.var);
        if (!c || !a || !b)
            throw ScheduleError(what + ": an index is not linear in loop '" + l.var.name() + "'");
        l.c = *c;
        l.a = *a;
        l.b = *b;
    }
}

} // namespace tessera::lower::detail
