// Aligned heap memory for generated code.
#include "tessera/runtime/alloc.h"

#include <cstdlib>

extern "C" void* tessera_alloc(int64_t bytes) {
    // aligned_alloc wants a multiple of the alignment; a zero-byte request still gets a block
    // so that distinct allocations never compare equal.
    size_t rounded = bytes <= 0 ? 64 : (static_cast<size_t>(bytes) + 63) / 64 * 64;
    return std::aligned_alloc(64, rounded);
}

extern "C" void tessera_free(void* p) { std::free(p); }
