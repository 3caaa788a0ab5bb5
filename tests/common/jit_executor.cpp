#include "common/jit_executor.h"

#include "tessera/backends/llvm.h"
#include "tessera/lower/lower_for_codegen.h"

namespace tessera::testing {

Executor jit_executor() {
    return [](const ir::LoweredFunc& f, std::vector<void*>& args) {
        auto jit = backend::JitModule::compile({lower::prepare_for_codegen(f)});
        jit->get(f.name)(args.data());
    };
}

} // namespace tessera::testing
