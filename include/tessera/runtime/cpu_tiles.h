// Permission to use the CPU's matrix tiles (x86 AMX), which Linux grants per process on
// request: without it the first tile instruction faults.
#pragma once

extern "C" {

/// Requests the AMX tile state for this process once (later calls return at once). Generated
/// code that uses tiles calls it on entry. A no-op where the OS needs no request (non-Linux,
/// non-x86-64). When the kernel refuses, prints one line to stderr and aborts: the code that
/// follows would fault on its first tile instruction.
void tessera_enable_cpu_tiles(void);

} // extern "C"
