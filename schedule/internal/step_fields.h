// Which Step fields are meaningful for each step kind (shared by equality, printing and JSON).
#pragma once

#include "tessera/schedule/step.h"

namespace tessera::sched {

enum StepField : unsigned {
    kFieldStage = 1u << 0,
    kFieldIter = 1u << 1,
    kFieldIters = 1u << 2,
    kFieldLengths = 1u << 3,
    kFieldInnerToOuter = 1u << 4,
    kFieldAnnotation = 1u << 5,
    kFieldPragma = 1u << 6,
    kFieldValue = 1u << 7,
    kFieldSrcStep = 1u << 8,
    kFieldNSplit = 1u << 9,
    kFieldTargetStage = 1u << 10,
    kFieldTargetIter = 1u << 11,
    kFieldScope = 1u << 12,
    kFieldReaders = 1u << 13,
};

/// The StepField bits of kind k.
unsigned step_fields(StepKind k);

} // namespace tessera::sched
