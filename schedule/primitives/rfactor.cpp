// rfactor: a reduce iterator becomes a spatial axis of a partial-reduction stage.
#include "../internal/body_util.h"
#include "../internal/error_msg.h"
#include "../internal/iter_graph.h"
#include "../internal/primitive.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

using namespace ir;

void do_rfactor(State& s, int stage, int iter) {
    Stage& st = loop_stage(s, stage, "rfactor");
    check_iter(st, iter, "rfactor");
    const auto* red = st.body.as<Reduce>();
    if (!red)
        throw ScheduleError(Msg() << "rfactor of '" << st.tensor.name()
                                  << "', which does not reduce");
    if (st.iters[iter].kind != IterKind::Reduce)
        throw ScheduleError(Msg() << "rfactor of '" << st.tensor.name() << "' at spatial iterator '"
                                  << st.iters[iter].name << "'");
    if (!s.attached_stages(stage).empty())
        throw ScheduleError(Msg() << "rfactor of '" << st.tensor.name()
                                  << "', which other stages are computed at");
    const int64_t factor = st.iters[iter].extent;

    // The new stage's variables: the axes, the factored axis, the other reduce iterators.
    VarMap m;
    std::vector<Var> rf_axes;
    for (const Var& a : st.axes) {
        rf_axes.emplace_back(a.name());
        m[a.get()] = rf_axes.back();
    }
    Var rf_var(st.iters[iter].name + ".rf");
    std::vector<Expr> leaf_values;
    std::vector<IterVar> rf_reduce;
    for (size_t k = 0; k < st.iters.size(); ++k) {
        const Iterator& it = st.iters[k];
        if (static_cast<int>(k) == iter) {
            leaf_values.push_back(rf_var);
        } else if (it.kind == IterKind::Reduce) {
            rf_reduce.push_back({Var(it.name), it.extent});
            leaf_values.push_back(rf_reduce.back().var);
        } else {
            leaf_values.push_back(Expr(0)); // spatial leaves do not feed reduce axes
        }
    }
    const std::vector<Expr> values = node_values(st, leaf_values);
    for (size_t r = 0; r < red->axes.size(); ++r)
        m[red->axes[r].var.get()] = values[st.axes.size() + r];

    // Imperfect splits of reduce iterators: accumulate only inside the original range.
    Expr pred;
    auto add_pred = [&](Expr c) { pred = pred.defined() ? logical_and(pred, c) : c; };
    for (const IterRelation& rel : st.relations) {
        if (rel.kind != IterRelation::Kind::Split ||
            st.nodes[rel.inputs[0]].kind != IterKind::Reduce)
            continue;
        int64_t prod = 1;
        for (int o : rel.outputs)
            prod *= st.nodes[o].extent;
        const int64_t e = st.nodes[rel.inputs[0]].extent;
        if (prod > e)
            add_pred(values[rel.inputs[0]] < Expr(e));
    }
    if (st.predicate.defined())
        add_pred(substitute(st.predicate, m));

    std::vector<Var> all_axes = rf_axes;
    all_axes.push_back(rf_var);
    std::vector<int64_t> shape = st.tensor.shape();
    shape.push_back(factor);
    Expr source = substitute(red->source, m);
    // With no reduce iterator left, reduce over one unit axis anyway: the identity store and
    // the guarded update keep reads outside an imperfect split from ever executing.
    if (rf_reduce.empty())
        rf_reduce.push_back({Var(st.iters[iter].name + ".unit"), 1});
    Expr body = Reduce::make(red->op, source, rf_reduce);
    Stage rf;
    rf.tensor = make_tensor(st.tensor.name() + ".rf", st.tensor.dtype(), shape, all_axes, body);
    rf.axes = all_axes;
    rf.body = body;
    rf.predicate = pred;
    rf.origin = StageOrigin::Rfactor;
    init_stage_iters(rf);

    // The original reduces the partial results over the factored axis.
    IterVar r{Var(st.iters[iter].name), factor};
    std::vector<Expr> idx(st.axes.begin(), st.axes.end());
    idx.push_back(r.var);
    st.body = Reduce::make(red->op, TensorRead::make(rf.tensor, idx), {r});
    st.predicate = Expr();
    init_stage_iters(st);
    st.auto_unroll_max_step = 0;
    insert_stage(s, stage, std::move(rf));
}

int rfactor(State& s, int stage, int iter) {
    Step st;
    st.kind = StepKind::Rfactor;
    st.stage = stage;
    st.iter = iter;
    apply_step(s, st);
    return stage;
}

} // namespace tessera::sched
