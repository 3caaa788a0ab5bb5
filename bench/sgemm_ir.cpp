// The hand-built sgemm loop IR (see sgemm_ir.h for the structure). Every register-tile loop is
// unrolled here in C++, so accumulator indices are constants in the IR itself and the program
// needs no vectorize or unroll pass.
#include "sgemm_ir.h"

#include <algorithm>
#include <string>
#include <vector>

#include "tessera/ir/op.h"
#include "tessera/support/error.h"

namespace tessera::bench {

using ir::Broadcast;
using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::For;
using ir::ForKind;
using ir::IfThenElse;
using ir::LetStmt;
using ir::Load;
using ir::MemoryScope;
using ir::Ramp;
using ir::Seq;
using ir::Stmt;
using ir::Store;
using ir::Var;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class SgemmBuilder {
public:
    SgemmBuilder(int64_t m, int64_t n, int64_t k, const SgemmConfig& cfg)
        : M(m), N(n), K(k), L(cfg.lanes), MR(cfg.mr), NV(cfg.nr_vectors), NR(cfg.nr_vectors * cfg.lanes),
          KC(std::min<int64_t>(cfg.kc, k)), U(cfg.k_unroll), cfg_(cfg) {
        A = Buffer::make("A", DataType::f32(), {M, K});
        B = Buffer::make("B", DataType::f32(), {K, N});
        C = Buffer::make("C", DataType::f32(), {M, N});
        n_panels_ = ceil_div(N, NR);
        Bp = Buffer::make("B_packed", DataType::f32(), {n_panels_, K, NR});
    }

    ir::LoweredFunc build(const std::string& name) {
        Stmt body = allocate(Bp, MemoryScope::Heap, Seq::make({pack_b(), compute()}));
        return ir::LoweredFunc{name, {A, B, C}, body};
    }

private:
    static Stmt allocate(Buffer b, MemoryScope s, Stmt body) {
        return ir::Allocate::make(std::move(b), s, std::move(body));
    }
    Expr ramp(Expr base) const { return Ramp::make(std::move(base), Expr(1), L); }
    Expr vload(const Buffer& b, Expr base) const { return Load::make(b, ramp(std::move(base))); }
    Stmt vstore(const Buffer& b, Expr base, Expr value) const {
        return Store::make(b, std::move(value), ramp(std::move(base)));
    }

    /// Bp[jp][k][c] = B[k][jp*NR + c], and 0 for columns past N. Parallel over chunks of rows
    /// of B (so both threads work even when N is a single panel); whole vectors are copied as
    /// vectors, and only the vector that straddles column N goes element by element.
    Stmt pack_b() const {
        const int64_t n_chunks = std::min<int64_t>(K, int64_t{cfg_.threads} * 4);
        const int64_t rows_per_chunk = ceil_div(K, n_chunks);
        Var chunk("kb"), k("k"), jp("jp");
        std::vector<Stmt> row;
        const int64_t full = N / NR;
        if (full > 0) {
            std::vector<Stmt> copies;
            for (int v = 0; v < NV; ++v)
                copies.push_back(vstore(Bp, jp * (K * NR) + k * NR + int64_t{v} * L,
                                        vload(B, k * N + jp * NR + int64_t{v} * L)));
            row.push_back(For::make(jp, 0, full, ForKind::Serial, Seq::make(copies)));
        }
        const int64_t ncols = N % NR;
        if (ncols != 0) {
            const int64_t j0 = full * NR;
            Expr dst = k * NR + full * K * NR;
            for (int v = 0; v < NV; ++v) {
                const int64_t col = int64_t{v} * L;
                if (col + L <= ncols) {
                    row.push_back(vstore(Bp, dst + col, vload(B, k * N + j0 + col)));
                } else if (col < ncols) {
                    // Reads clamp to column N-1 (a Select would still evaluate the load).
                    Var cc("c");
                    Expr src = Load::make(B, k * N + ir::min(cc + (j0 + col), Expr(N - 1)));
                    row.push_back(For::make(
                        cc, 0, L, ForKind::Serial,
                        Store::make(Bp, ir::select(cc < Expr(ncols - col), src, Expr(0.0f)),
                                    dst + col + cc)));
                } else {
                    row.push_back(vstore(Bp, dst + col, Broadcast::make(Expr(0.0f), L)));
                }
            }
        }
        Stmt rows = For::make(k, chunk * rows_per_chunk,
                              ir::min(Expr(rows_per_chunk), K - chunk * rows_per_chunk),
                              ForKind::Serial, Seq::make(row));
        return For::make(chunk, 0, ceil_div(K, rows_per_chunk), ForKind::Parallel, rows);
    }

    /// The parallel loop over M blocks.
    Stmt compute() const {
        const int64_t n_mp = ceil_div(M, MR); // A panels (register-tile rows) in all of M
        int64_t n_blocks = std::max<int64_t>(cfg_.threads, ceil_div(n_mp * MR, cfg_.mc));
        n_blocks = std::min(n_mp, ceil_div(n_blocks, cfg_.threads) * cfg_.threads);
        const int64_t mcp = ceil_div(n_mp, n_blocks); // A panels per block
        n_blocks = ceil_div(n_mp, mcp);
        const int64_t n_kb = ceil_div(K, KC);

        Buffer Ap = Buffer::make("A_packed", DataType::f32(), {mcp, KC, MR});
        Var blk("blk"), np("np"), pc("pc"), kce("kce"), p("p"), k("k"), jr("jr");

        // Pack A: Ap[p][k][r] = A[min(row, M-1)][pc*KC + k], row = (blk*mcp + p)*MR + r.
        std::vector<Stmt> pack_rows;
        for (int r = 0; r < MR; ++r) {
            Expr row = ir::min((blk * mcp + p) * MR + r, Expr(M - 1));
            pack_rows.push_back(Store::make(Ap, Load::make(A, row * K + pc * KC + k),
                                            p * (KC * MR) + k * MR + r));
        }
        Stmt pack_a = For::make(p, 0, np, ForKind::Serial,
                                For::make(k, 0, kce, ForKind::Serial, Seq::make(pack_rows)));

        std::vector<Stmt> kernels;
        Expr first = ir::eq(pc, Expr(0));
        const int64_t full_panels = N / NR;
        // A tile loop over the block's A panels; every loop binds its own variable.
        auto tile_loop = [&](Expr jp, int64_t ncols) {
            Var ir_("ir");
            Tile t;
            t.ap_base = ir_ * (KC * MR);
            t.bp_base = jp * (K * NR) + pc * (KC * NR);
            t.i0 = (blk * mcp + ir_) * MR;
            t.j0 = jp * NR;
            t.kce = kce;
            t.first = first;
            t.ncols = ncols;
            return For::make(ir_, 0, np, ForKind::Serial, micro_kernel(t, Ap));
        };
        if (full_panels > 0)
            kernels.push_back(For::make(jr, 0, full_panels, ForKind::Serial, tile_loop(jr, NR)));
        if (N % NR != 0) kernels.push_back(tile_loop(Expr(full_panels), N % NR));
        Stmt kblock = LetStmt::make(
            kce, ir::min(Expr(KC), K - pc * KC),
            Seq::make({pack_a, Seq::make(kernels)}));
        Stmt block = LetStmt::make(
            np, ir::min(Expr(mcp), n_mp - blk * mcp),
            allocate(Ap, MemoryScope::Heap, For::make(pc, 0, n_kb, ForKind::Serial, kblock)));
        return For::make(blk, 0, n_blocks, ForKind::Parallel, block);
    }

    struct Tile {
        Expr ap_base, bp_base; ///< Start of this tile's packed A panel and packed B panel.
        Expr i0, j0;           ///< Top-left element of the C tile.
        Expr kce;              ///< K extent of this K block.
        Expr first;            ///< True in the first K block (store, not accumulate).
        int64_t ncols;         ///< Valid columns of the tile (NR except in the last panel).
    };

    /// The mr x NR register tile: accumulate over the K block, then store into C.
    Stmt micro_kernel(const Tile& t, const Buffer& Ap) const {
        Buffer acc = Buffer::make("acc", DataType::f32(), {MR, NR});
        auto acc_at = [&](int r, int v) { return ramp(Expr(int64_t{r} * NR + int64_t{v} * L)); };

        std::vector<Stmt> init;
        for (int r = 0; r < MR; ++r)
            for (int v = 0; v < NV; ++v)
                init.push_back(Store::make(acc, Broadcast::make(Expr(0.0f), L), acc_at(r, v)));

        // One k step: NV vectors of packed B, and per row one broadcast A element.
        auto step = [&](Expr kx) {
            std::vector<Var> b;
            for (int v = 0; v < NV; ++v) b.emplace_back("b" + std::to_string(v), DataType::f32(L));
            std::vector<Stmt> rows;
            for (int r = 0; r < MR; ++r) {
                Var a("a" + std::to_string(r), DataType::f32(L));
                std::vector<Stmt> fmas;
                for (int v = 0; v < NV; ++v)
                    fmas.push_back(Store::make(acc, a * b[v] + Load::make(acc, acc_at(r, v)), acc_at(r, v)));
                rows.push_back(LetStmt::make(
                    a, Broadcast::make(Load::make(Ap, t.ap_base + kx * MR + r), L), Seq::make(fmas)));
            }
            Stmt s = Seq::make(rows);
            for (int v = NV - 1; v >= 0; --v)
                s = LetStmt::make(b[v], vload(Bp, t.bp_base + kx * NR + int64_t{v} * L), s);
            return s;
        };

        std::vector<Stmt> kloops;
        if (U > 1) {
            Var kk("kk");
            std::vector<Stmt> steps;
            for (int u = 0; u < U; ++u) steps.push_back(step(kk * U + u));
            kloops.push_back(For::make(kk, 0, t.kce / U, ForKind::Serial, Seq::make(steps)));
            Var k("k");
            Expr tail_min = t.kce / U * U;
            kloops.push_back(For::make(k, tail_min, t.kce - tail_min, ForKind::Serial, step(k)));
        } else {
            Var k("k");
            kloops.push_back(For::make(k, 0, t.kce, ForKind::Serial, step(k)));
        }

        // Prefetch the C tile now, so the rows (each in its own page for large N) arrive while
        // the k loop runs instead of stalling the stores at the end: one prefetch per 64-byte
        // line (16 floats). Rows past M prefetch row M-1 instead.
        std::vector<Stmt> prefetch;
        if (cfg_.prefetch_c) {
            for (int r = 0; r < MR; ++r)
                for (int64_t col = 0; col < t.ncols; col += 16)
                    prefetch.push_back(ir::Evaluate::make(ir::Call::make(
                        ir::CallOp::Prefetch,
                        {Load::make(C, ir::min(t.i0 + r, Expr(M - 1)) * N + t.j0 + col)})));
        }
        init.insert(init.end(), prefetch.begin(), prefetch.end());
        return allocate(acc, MemoryScope::Stack,
                        Seq::make({Seq::make(init), Seq::make(kloops), store_tile(t, acc)}));
    }

    /// Stores (first K block) or adds the accumulators into C, only for rows < M and the tile's
    /// valid columns.
    Stmt store_tile(const Tile& t, const Buffer& acc) const {
        auto acc_row = [&](int r, int v) {
            return Load::make(acc, ramp(Expr(int64_t{r} * NR + int64_t{v} * L)));
        };
        if (t.ncols == NR) {
            auto row = [&](int r, bool accumulate) {
                std::vector<Stmt> s;
                for (int v = 0; v < NV; ++v) {
                    Expr at = (t.i0 + r) * N + t.j0 + int64_t{v} * L;
                    Expr val = accumulate ? acc_row(r, v) + vload(C, at) : acc_row(r, v);
                    s.push_back(vstore(C, at, val));
                }
                return Seq::make(s);
            };
            auto rows = [&](bool accumulate, bool guarded) {
                std::vector<Stmt> s;
                for (int r = 0; r < MR; ++r) {
                    if (guarded && r > 0) s.push_back(IfThenElse::make(t.i0 + r < Expr(M), row(r, accumulate)));
                    else s.push_back(row(r, accumulate));
                }
                return Seq::make(s);
            };
            return IfThenElse::make(
                t.i0 + MR <= Expr(M),
                IfThenElse::make(t.first, rows(false, false), rows(true, false)),
                IfThenElse::make(t.first, rows(false, true), rows(true, true)));
        }
        // Partial panel: whole vectors go straight to C; the valid part of the last vector is
        // spilled to a small buffer and copied element by element, so the accumulator buffer
        // itself is only ever indexed by constants.
        const int full_vecs = static_cast<int>(t.ncols / L);
        const int64_t rem = t.ncols % L;
        Buffer row_buf = Buffer::make("c_row", DataType::f32(), {L});
        auto rows = [&](bool accumulate) {
            std::vector<Stmt> s;
            for (int r = 0; r < MR; ++r) {
                std::vector<Stmt> body;
                for (int v = 0; v < full_vecs; ++v) {
                    Expr at = (t.i0 + r) * N + t.j0 + int64_t{v} * L;
                    body.push_back(vstore(C, at, accumulate ? acc_row(r, v) + vload(C, at) : acc_row(r, v)));
                }
                if (rem > 0) {
                    body.push_back(vstore(row_buf, Expr(0), acc_row(r, full_vecs)));
                    Var c("c");
                    Expr at = (t.i0 + r) * N + t.j0 + int64_t{full_vecs} * L + c;
                    Expr val = Load::make(row_buf, c);
                    if (accumulate) val = val + Load::make(C, at);
                    body.push_back(For::make(c, 0, rem, ForKind::Serial, Store::make(C, val, at)));
                }
                Stmt row = Seq::make(body);
                s.push_back(r == 0 ? row : IfThenElse::make(t.i0 + r < Expr(M), row));
            }
            return Seq::make(s);
        };
        Stmt store = IfThenElse::make(t.first, rows(false), rows(true));
        return rem > 0 ? allocate(row_buf, MemoryScope::Stack, store) : store;
    }

    const int64_t M, N, K;
    const int L, MR, NV, NR;
    const int64_t KC;
    const int U;
    const SgemmConfig cfg_;
    int64_t n_panels_ = 0;
    Buffer A, B, C, Bp;
};

} // namespace

SgemmConfig sgemm_config_for(int vector_bits, int threads) {
    SgemmConfig c;
    c.threads = std::max(1, threads);
    if (vector_bits >= 512) return c;
    c.lanes = vector_bits >= 256 ? 8 : 4;
    c.mr = 6;
    c.nr_vectors = 2;
    c.kc = 256;
    return c;
}

ir::LoweredFunc build_sgemm_ir(int64_t M, int64_t N, int64_t K, const SgemmConfig& config,
                               const char* name) {
    if (M < 1 || N < 1 || K < 1)
        throw UserError() << "sgemm sizes must be positive, got " << M << "x" << N << "x" << K;
    if (config.lanes < 2 || config.mr < 1 || config.nr_vectors < 1 || config.kc < 1 ||
        config.mc < 1 || config.threads < 1 || config.k_unroll < 1)
        throw UserError() << "invalid sgemm config (lanes " << config.lanes << ", mr " << config.mr
                          << ", nr_vectors " << config.nr_vectors << ", kc " << config.kc << ", mc "
                          << config.mc << ", threads " << config.threads << ", k_unroll "
                          << config.k_unroll << ")";
    return SgemmBuilder(M, N, K, config).build(name);
}

} // namespace tessera::bench
