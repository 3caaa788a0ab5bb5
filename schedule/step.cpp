// Step: names of the enums, equality and the readable form.
#include "tessera/schedule/step.h"

#include <sstream>

#include "internal/step_fields.h"
#include "tessera/support/error.h"

namespace tessera::sched {

namespace {
struct AnnotationName {
    IterAnnotation a;
    const char* name;
};
constexpr AnnotationName kAnnotations[] = {
    {IterAnnotation::None, "none"},           {IterAnnotation::Parallel, "parallel"},
    {IterAnnotation::Vectorize, "vectorize"}, {IterAnnotation::Unroll, "unroll"},
    {IterAnnotation::BlockX, "blockIdx.x"},   {IterAnnotation::BlockY, "blockIdx.y"},
    {IterAnnotation::BlockZ, "blockIdx.z"},   {IterAnnotation::VThread, "vthread"},
    {IterAnnotation::ThreadX, "threadIdx.x"}, {IterAnnotation::ThreadY, "threadIdx.y"},
    {IterAnnotation::ThreadZ, "threadIdx.z"}, {IterAnnotation::TileMatmul, "tile_matmul"},
    {IterAnnotation::WarpMma, "warp_mma"}, {IterAnnotation::Pipeline, "pipeline"},
};

struct KindName {
    StepKind k;
    const char* name;
};
constexpr KindName kKinds[] = {
    {StepKind::Split, "split"},
    {StepKind::FollowSplit, "follow_split"},
    {StepKind::Fuse, "fuse"},
    {StepKind::Reorder, "reorder"},
    {StepKind::Annotate, "annotate"},
    {StepKind::Pragma, "pragma"},
    {StepKind::ComputeAt, "compute_at"},
    {StepKind::ComputeInline, "compute_inline"},
    {StepKind::ComputeRoot, "compute_root"},
    {StepKind::CacheWrite, "cache_write"},
    {StepKind::CacheRead, "cache_read"},
    {StepKind::Rfactor, "rfactor"},
    {StepKind::TransformLayout, "transform_layout"},
};
} // namespace

bool is_gpu_binding(IterAnnotation a) {
    switch (a) {
    case IterAnnotation::BlockX:
    case IterAnnotation::BlockY:
    case IterAnnotation::BlockZ:
    case IterAnnotation::VThread:
    case IterAnnotation::ThreadX:
    case IterAnnotation::ThreadY:
    case IterAnnotation::ThreadZ:
        return true;
    case IterAnnotation::None:
    case IterAnnotation::Parallel:
    case IterAnnotation::Vectorize:
    case IterAnnotation::Unroll:
    case IterAnnotation::TileMatmul:
    case IterAnnotation::WarpMma:
    case IterAnnotation::Pipeline:
        return false;
    }
    return false;
}

const char* to_string(IterAnnotation a) {
    for (const auto& n : kAnnotations)
        if (n.a == a)
            return n.name;
    TESSERA_UNREACHABLE() << "iterator annotation " << int(a);
}

IterAnnotation parse_iter_annotation(const std::string& s) {
    for (const auto& n : kAnnotations)
        if (s == n.name)
            return n.a;
    throw UserError() << "unknown iterator annotation '" << s << "'";
}

const char* to_string(StepKind k) {
    for (const auto& n : kKinds)
        if (n.k == k)
            return n.name;
    TESSERA_UNREACHABLE() << "step kind " << int(k);
}

StepKind parse_step_kind(const std::string& s) {
    for (const auto& n : kKinds)
        if (s == n.name)
            return n.k;
    throw UserError() << "unknown step kind '" << s << "'";
}

unsigned step_fields(StepKind k) {
    switch (k) {
    case StepKind::Split:
        return kFieldStage | kFieldIter | kFieldLengths | kFieldInnerToOuter;
    case StepKind::FollowSplit:
        return kFieldStage | kFieldIter | kFieldSrcStep | kFieldNSplit;
    case StepKind::Fuse:
    case StepKind::Reorder:
        return kFieldStage | kFieldIters;
    case StepKind::Annotate:
        return kFieldStage | kFieldIter | kFieldAnnotation;
    case StepKind::Pragma:
        return kFieldStage | kFieldIter | kFieldPragma | kFieldValue;
    case StepKind::ComputeAt:
        return kFieldStage | kFieldTargetStage | kFieldTargetIter;
    case StepKind::ComputeInline:
    case StepKind::ComputeRoot:
        return kFieldStage;
    case StepKind::CacheWrite:
        return kFieldStage | kFieldScope;
    case StepKind::CacheRead:
        return kFieldStage | kFieldScope | kFieldReaders;
    case StepKind::Rfactor:
        return kFieldStage | kFieldIter;
    case StepKind::TransformLayout:
        return kFieldStage | kFieldLengths | kFieldIters;
    }
    TESSERA_UNREACHABLE() << "step kind " << int(k);
}

bool Step::operator==(const Step& o) const {
    if (kind != o.kind)
        return false;
    const unsigned f = step_fields(kind);
    return (!(f & kFieldStage) || stage == o.stage) && (!(f & kFieldIter) || iter == o.iter) &&
           (!(f & kFieldIters) || iters == o.iters) &&
           (!(f & kFieldLengths) || lengths == o.lengths) &&
           (!(f & kFieldInnerToOuter) || inner_to_outer == o.inner_to_outer) &&
           (!(f & kFieldAnnotation) || annotation == o.annotation) &&
           (!(f & kFieldPragma) || pragma == o.pragma) &&
           (!(f & kFieldValue) || value == o.value) &&
           (!(f & kFieldSrcStep) || src_step == o.src_step) &&
           (!(f & kFieldNSplit) || n_split == o.n_split) &&
           (!(f & kFieldTargetStage) || target_stage == o.target_stage) &&
           (!(f & kFieldTargetIter) || target_iter == o.target_iter) &&
           (!(f & kFieldScope) || scope == o.scope) &&
           (!(f & kFieldReaders) || readers == o.readers);
}

namespace {
template <typename T> void print_list(std::ostream& os, const std::vector<T>& v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i)
        os << (i ? ", " : "") << v[i];
    os << "]";
}
} // namespace

std::string to_string(const Step& s) {
    std::ostringstream os;
    const unsigned f = step_fields(s.kind);
    os << to_string(s.kind) << "(";
    const char* sep = "";
    auto field = [&](const char* name) -> std::ostream& {
        os << sep << name << "=";
        sep = ", ";
        return os;
    };
    if (f & kFieldStage)
        field("stage") << s.stage;
    if (f & kFieldIter)
        field("iter") << s.iter;
    if (f & kFieldIters)
        print_list(field(s.kind == StepKind::TransformLayout ? "order" : "iters"), s.iters);
    if (f & kFieldLengths)
        print_list(field(s.kind == StepKind::TransformLayout ? "factors" : "lengths"), s.lengths);
    if (f & kFieldInnerToOuter)
        field("inner_to_outer") << (s.inner_to_outer ? "true" : "false");
    if (f & kFieldAnnotation)
        field("annotation") << to_string(s.annotation);
    if (f & kFieldPragma)
        field("pragma") << s.pragma;
    if (f & kFieldValue)
        field("value") << s.value;
    if (f & kFieldSrcStep)
        field("src_step") << s.src_step;
    if (f & kFieldNSplit)
        field("n_split") << s.n_split;
    if (f & kFieldTargetStage)
        field("target_stage") << s.target_stage;
    if (f & kFieldTargetIter)
        field("target_iter") << s.target_iter;
    if (f & kFieldScope)
        field("scope") << s.scope;
    if (f & kFieldReaders)
        print_list(field("readers"), s.readers);
    os << ")";
    return os.str();
}

} // namespace tessera::sched
