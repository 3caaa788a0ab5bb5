// Test helpers (header-only, shared by tests/backends and tests/lower): compile one hand-built
// function with the JIT and run it on host vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"
#include "tessera/lower/lower_for_codegen.h"

namespace tessera::testing {

/// A compiled single function `f` and a way to call it.
struct JitKernel {
    std::unique_ptr<backend::JitModule> module;
    backend::JitModule::KernelFn fn = nullptr;

    /// Calls the kernel with pointers to each argument's data.
    template <typename... Vs> void operator()(Vs&... vs) const {
        void* args[] = {static_cast<void*>(vs.data())...};
        fn(args);
    }
};

/// Compiles LoweredFunc{name "f", params, body}; the body goes through prepare_for_codegen
/// when `prepare` is set.
inline JitKernel jit_compile(std::vector<ir::Buffer> params, ir::Stmt body,
                             const backend::CompileOptions& opts = {}, bool prepare = false) {
    ir::LoweredFunc f{"f", std::move(params), std::move(body)};
    if (prepare)
        f = lower::prepare_for_codegen(f);
    JitKernel k;
    k.module = backend::JitModule::compile({f}, opts);
    k.fn = k.module->get("f");
    return k;
}

/// The host's CPU with its enabled features, then `extra` (e.g. "-avx512vnni,-avxvnni" or
/// "-amx-int8,-amx-tile": the host without those).
inline backend::CompileOptions host_options_with(const std::string& extra) {
    const backend::CpuInfo& h = backend::host_info();
    backend::CompileOptions o;
    o.cpu = h.cpu_name;
    for (const std::string& f : h.features)
        o.features += (o.features.empty() ? "+" : ",+") + f;
    o.features += "," + extra;
    return o;
}

/// A 1-D buffer of n elements of type t.
inline ir::Buffer buf(const std::string& name, ir::DataType t, int64_t n) {
    return ir::Buffer::make(name, t, {n});
}

/// for (v, 0, n) kind: body(v).
template <typename F> ir::Stmt loop(const std::string& name, int64_t n, ir::ForKind kind, F body) {
    ir::Var v(name);
    return ir::For::make(v, ir::Expr(int64_t{0}), ir::Expr(n), kind, body(v));
}

/// element(i) for i < n: full blocks of `lanes` in a Vectorized inner loop (none for lanes 1),
/// then the rest as a scalar loop.
template <typename F> ir::Stmt vector_loop_with_tail(int64_t n, int lanes, F element) {
    const int64_t blocks = lanes > 1 ? n / lanes : 0;
    std::vector<ir::Stmt> parts;
    if (blocks > 0)
        parts.push_back(loop("blk", blocks, ir::ForKind::Serial, [&](ir::Var blk) {
            return loop("lane", lanes, ir::ForKind::Vectorized,
                        [&](ir::Var lane) { return element(blk * lanes + lane); });
        }));
    ir::Var t("t");
    parts.push_back(ir::For::make(t, ir::Expr(blocks * lanes), ir::Expr(n - blocks * lanes),
                                  ir::ForKind::Serial, element(t)));
    return parts.size() == 1 ? parts[0] : ir::Seq::make(parts);
}

} // namespace tessera::testing
