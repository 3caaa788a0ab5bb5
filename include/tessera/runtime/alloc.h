// Heap memory for generated code: what a heap Allocate statement calls.
#pragma once

#include <cstdint>

extern "C" {

/// 64-byte aligned memory of at least `bytes` bytes (bytes <= 0 gives a valid, unique block).
/// Returns null when the system is out of memory. Release with tessera_free.
void* tessera_alloc(int64_t bytes);

/// Releases memory from tessera_alloc; null is ignored. Blocks up to 64 MiB go to a small cache
/// of the calling thread (at most 16 blocks, 64 MiB), which later tessera_alloc calls of that
/// thread reuse, so a kernel that allocates on every call does not pay fresh pages each time.
/// Any thread may free a block from any other.
void tessera_free(void* p);

} // extern "C"
