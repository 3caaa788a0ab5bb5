#include "common/jit_executor.h"

#include "tessera/backends/llvm.h"

namespace tessera::testing {

Executor jit_executor() {
    return [](const ir::LoweredFunc& f, std::vector<void*>& args) {
        auto jit = backend::JitModule::compile({f}); // the backend prepares it
        jit->get(f.name)(args.data());
    };
}

} // namespace tessera::testing
