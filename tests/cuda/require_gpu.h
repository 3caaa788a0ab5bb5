// TESSERA_REQUIRE_GPU(): skips the running test with "[SKIP] <reason>" when there is no CUDA
// driver or device (scripts/gpu_check.sh greps for that line).
#pragma once

#include <gtest/gtest.h>

#include "tessera/backends/cuda_driver.h"

#define TESSERA_REQUIRE_GPU()                                                                      \
    do {                                                                                           \
        const ::tessera::backend::cuda::CudaDriver& d =                                            \
            ::tessera::backend::cuda::CudaDriver::get();                                           \
        if (!d.available())                                                                        \
            GTEST_SKIP() << "[SKIP] " << d.unavailable_reason();                                   \
    } while (0)
