// tessera-measure-worker: the measurement worker (tuner/measure_worker.cpp, the protocol of
// tuner/runner.h) as a program of its own, without LLVM or the database. Built for the
// architectures tessera cross-compiles to: `tessera tune --target "llvm -mtriple=..." --runner
// CMD` runs it where the candidates run (under qemu-user here, or on a board) and sends it
// each candidate with its data. Built for the host too, as the Python package's worker (a
// Python process has no `tessera __measure-worker`). The kernels it loads take the runtime's symbols (thread pool,
// allocator) from it: it is linked with --export-dynamic.
#include <cstdio>
#include <string>

#include "tessera/tuner/measure.h"

int main(int argc, char** argv) {
    // --streamed-only: every file must come through the connection (the tests check that a
    // streaming tuner needs no shared folder).
    const bool streamed_only = argc == 2 && std::string(argv[1]) == "--streamed-only";
    if (argc > 2 || (argc == 2 && !streamed_only)) {
        std::fprintf(stderr,
                     "usage: %s [--streamed-only] (started by `tessera tune --runner CMD`)\n",
                     argv[0]);
        return 2;
    }
    return tessera::tune::measure_worker_main(streamed_only);
}
