// transform_layout: store a stage (an input, or an intermediate) in a packed layout.
#include "../internal/error_msg.h"
#include "../internal/primitive.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void do_transform_layout(State& s, int stage, const LayoutTransform& layout) {
    const Stage& st = s.stage(stage);
    if (!st.is_input() && s.is_output(stage))
        throw ScheduleError(Msg() << "transform_layout of output '" << st.tensor.name()
                                  << "' (outputs stay dense row-major)");
    if (st.location.kind == ComputeLocKind::Inlined)
        throw ScheduleError(Msg() << "transform_layout of inlined stage '" << st.tensor.name()
                                  << "'");
    check_layout(layout, st.tensor.shape());
    s.stages[stage].layout = layout;
}

void transform_layout(State& s, int stage, const LayoutTransform& layout) {
    Step st;
    st.kind = StepKind::TransformLayout;
    st.stage = stage;
    st.lengths = layout.factors;
    st.iters = layout.order;
    apply_step(s, st);
}

} // namespace tessera::sched
