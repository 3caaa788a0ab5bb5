// State: the initial state of a Compute, lookup, enum names and the readable dump.
#include "tessera/schedule/state.h"

#include <sstream>

#include "internal/error_msg.h"
#include "internal/iter_graph.h"
#include "tessera/support/error.h"

namespace tessera::sched {

const char* to_string(IterKind k) {
    switch (k) {
    case IterKind::Spatial:
        return "spatial";
    case IterKind::Reduce:
        return "reduce";
    }
    TESSERA_UNREACHABLE() << "iter kind " << int(k);
}

const char* to_string(ComputeLocKind k) {
    switch (k) {
    case ComputeLocKind::Root:
        return "root";
    case ComputeLocKind::Inlined:
        return "inlined";
    case ComputeLocKind::At:
        return "at";
    }
    TESSERA_UNREACHABLE() << "compute location " << int(k);
}

const char* to_string(StageScope s) {
    switch (s) {
    case StageScope::Global:
        return "global";
    case StageScope::Local:
        return "local";
    case StageScope::Shared:
        return "shared";
    }
    TESSERA_UNREACHABLE() << "stage scope " << int(s);
}

const char* to_string(StageOrigin o) {
    switch (o) {
    case StageOrigin::Input:
        return "input";
    case StageOrigin::Original:
        return "original";
    case StageOrigin::CacheWrite:
        return "cache_write";
    case StageOrigin::CacheRead:
        return "cache_read";
    case StageOrigin::Rfactor:
        return "rfactor";
    }
    TESSERA_UNREACHABLE() << "stage origin " << int(o);
}

bool LayoutTransform::is_identity() const {
    for (int64_t f : factors)
        if (f > 1)
            return false;
    for (size_t i = 0; i < order.size(); ++i)
        if (order[i] != static_cast<int>(i))
            return false;
    return true;
}

bool Stage::has_reduce() const { return body.defined() && body.as<ir::Reduce>() != nullptr; }

std::vector<ir::IterVar> Stage::reduce_axes() const {
    if (const auto* r = body.defined() ? body.as<ir::Reduce>() : nullptr)
        return r->axes;
    return {};
}

int Stage::iter_of_node(int node) const {
    for (size_t i = 0; i < iters.size(); ++i)
        if (iters[i].node == node)
            return static_cast<int>(i);
    return -1;
}

int State::stage_id_of(const ir::Tensor& t) const {
    for (size_t i = 0; i < stages.size(); ++i)
        if (stages[i].tensor.same_as(t))
            return static_cast<int>(i);
    return -1;
}

int State::stage_id_of(const std::string& name) const {
    for (size_t i = 0; i < stages.size(); ++i)
        if (stages[i].tensor.name() == name)
            return static_cast<int>(i);
    return -1;
}

const Stage& State::stage(int stage_id, const char* what) const {
    if (stage_id < 0 || stage_id >= static_cast<int>(stages.size()))
        throw ScheduleError(Msg() << what << " id " << stage_id
                                  << " is out of range (the state has " << stages.size()
                                  << " stages)");
    return stages[stage_id];
}

void init_stage_iters(Stage& st) {
    st.nodes.clear();
    st.relations.clear();
    st.iters.clear();
    const auto& shape = st.tensor.shape();
    for (size_t d = 0; d < st.axes.size(); ++d)
        st.nodes.push_back({st.axes[d].name(), shape[d], IterKind::Spatial});
    for (const ir::IterVar& iv : st.reduce_axes())
        st.nodes.push_back({iv.var.name(), iv.extent, IterKind::Reduce});
    for (size_t n = 0; n < st.nodes.size(); ++n)
        st.iters.push_back({st.nodes[n].name, st.nodes[n].extent, st.nodes[n].kind,
                            IterAnnotation::None, static_cast<int>(n)});
}

State make_initial_state(const te::Compute& c) {
    State s;
    s.compute = c;
    for (const ir::Tensor& t : c.inputs) {
        Stage st;
        st.tensor = t;
        st.origin = StageOrigin::Input;
        s.stages.push_back(std::move(st));
    }
    for (const ir::Tensor& t : c.stages) {
        Stage st;
        st.tensor = t;
        st.axes = t->axes;
        st.body = t->body;
        st.origin = StageOrigin::Original;
        init_stage_iters(st);
        s.stages.push_back(std::move(st));
    }
    return s;
}

namespace {
void dump_stage(const State& s, int sid, int indent, std::ostringstream& os);

void dump_attached(const State& s, int sid, int iter, int indent, std::ostringstream& os) {
    for (int a : s.attached_at(sid, iter))
        dump_stage(s, a, indent, os);
}

void dump_stage(const State& s, int sid, int indent, std::ostringstream& os) {
    const Stage& st = s.stages[sid];
    os << std::string(indent * 2, ' ') << st.tensor.name() << " [" << to_string(st.origin);
    if (st.scope != StageScope::Global)
        os << ", " << to_string(st.scope);
    if (st.auto_unroll_max_step > 0)
        os << ", auto_unroll_max_step=" << st.auto_unroll_max_step;
    if (!st.layout.is_identity())
        os << ", layout";
    os << "]\n";
    for (size_t k = 0; k < st.iters.size(); ++k) {
        const Iterator& it = st.iters[k];
        ++indent;
        os << std::string(indent * 2, ' ') << "for " << it.name << " (" << it.extent << ")";
        if (it.kind == IterKind::Reduce)
            os << " reduce";
        if (it.annotation != IterAnnotation::None)
            os << " " << to_string(it.annotation);
        os << "\n";
        dump_attached(s, sid, static_cast<int>(k), indent + 1, os);
    }
}
} // namespace

std::string to_string(const State& s) {
    std::ostringstream os;
    for (size_t i = 0; i < s.stages.size(); ++i) {
        const Stage& st = s.stages[i];
        if (st.is_input()) {
            if (!st.layout.is_identity())
                os << st.tensor.name() << " [input, layout]\n";
            continue;
        }
        if (st.location.kind == ComputeLocKind::Inlined)
            os << st.tensor.name() << " [inlined]\n";
        else if (st.location.kind == ComputeLocKind::Root)
            dump_stage(s, static_cast<int>(i), 0, os);
    }
    return os.str();
}

} // namespace tessera::sched
