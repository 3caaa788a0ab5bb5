// annotate (parallel, vectorize, unroll, GPU bindings) and pragma.
#include "../internal/error_msg.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void do_annotate(State& s, int stage, int iter, IterAnnotation a) {
    Stage& st = loop_stage(s, stage, "annotate");
    check_iter(st, iter, "annotate");
    Iterator& it = st.iters[iter];
    if (it.kind == IterKind::Reduce &&
        (a == IterAnnotation::Parallel || a == IterAnnotation::Vectorize))
        throw ScheduleError(Msg() << "cannot " << to_string(a) << " reduce iterator '" << it.name
                                  << "' of '" << st.tensor.name() << "'");
    it.annotation = a;
}

void do_pragma(State& s, int stage, int iter, const std::string& name, int64_t value) {
    Stage& st = loop_stage(s, stage, "pragma");
    check_iter(st, iter, "pragma");
    if (name != "auto_unroll_max_step")
        throw ScheduleError(Msg() << "unknown pragma '" << name << "'");
    if (value < 0)
        throw ScheduleError(Msg() << "pragma auto_unroll_max_step with a negative value " << value);
    st.auto_unroll_max_step = value;
}

void annotate(State& s, int stage, int iter, IterAnnotation a) {
    Step st;
    st.kind = StepKind::Annotate;
    st.stage = stage;
    st.iter = iter;
    st.annotation = a;
    apply_step(s, st);
}

void pragma(State& s, int stage, int iter, const std::string& name, int64_t value) {
    Step st;
    st.kind = StepKind::Pragma;
    st.stage = stage;
    st.iter = iter;
    st.pragma = name;
    st.value = value;
    apply_step(s, st);
}

} // namespace tessera::sched
