// tessera-measure-worker: the measurement worker (tuner/measure_worker.cpp, the protocol of
// tuner/runner.h) as a program of its own, without LLVM or the database, built for the
// architectures tessera cross-compiles to: `tessera tune --target "llvm -mtriple=..." --runner
// CMD` runs it where the candidates run (under qemu-user here, or on a board). The kernels it
// loads take the runtime's symbols (thread pool, allocator) from it: it is linked with
// --export-dynamic.
#include "tessera/tuner/measure.h"

int main() { return tessera::tune::measure_worker_main(); }
