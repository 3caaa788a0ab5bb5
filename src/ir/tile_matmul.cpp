// TileMatmul: the call's argument layout, its checks and the loops it stands for.
#include "tessera/ir/tile_matmul.h"

#include "tessera/ir/op.h"
#include "tessera/support/error.h"

namespace tessera::ir {

namespace {

// Argument layout of the call: the three Loads, then the sizes and strides in this order, then
// three integers per reduce loop.
constexpr size_t kLoads = 3, kFields = 12, kPerLoop = 3;

int64_t int_arg(const Call& call, size_t i) {
    const IntImm* v = call.args[i].as<IntImm>();
    TESSERA_CHECK(v) << "tile_matmul argument " << i << " is not an integer constant";
    return v->value;
}

void check_fields(const TileMatmul& t) {
    const bool bf16 = t.product == CallOp::Dot2BF16;
    TESSERA_CHECK(bf16 || t.product == CallOp::Dot4U8S8)
        << "tile_matmul of " << to_string(t.product);
    const DataType acc = bf16 ? DataType::f32() : DataType::i32();
    const DataType elem = bf16 ? DataType::bf16() : DataType::u8();
    for (const Expr* e : {&t.c, &t.a, &t.b}) {
        const Load* l = e->as<Load>();
        const DataType want = e == &t.c ? acc : DataType::i32();
        TESSERA_CHECK(l && (l->type == want || (e == &t.a && l->type == elem)))
            << "tile_matmul operand is not a scalar " << want << " Load (A: or " << elem << ")";
    }
    TESSERA_CHECK(t.m >= 1 && t.m <= TileMatmul::kMaxRows && t.n >= 1 &&
                  t.n <= TileMatmul::kMaxColumnWords && t.k >= 1 &&
                  t.k <= TileMatmul::kMaxColumnWords && t.k <= TileMatmul::kMaxRows)
        << "tile_matmul tile " << t.m << "x" << t.n << "x" << t.k << " exceeds a 16x16x16 tile";
    TESSERA_CHECK(t.m_tiles >= 1 && t.n_tiles >= 1 &&
                  t.tile_registers() <= TileMatmul::kTileRegisters)
        << "tile_matmul of " << t.m_tiles << "x" << t.n_tiles << " tiles needs "
        << t.tile_registers() << " tile registers (8 exist)";
    for (const auto& l : t.loops)
        TESSERA_CHECK(l.extent >= 1) << "tile_matmul reduce loop of extent " << l.extent;
}

} // namespace

int64_t TileMatmul::a_elements_per_word() const {
    return a.type() == DataType::i32() ? 1 : word_elements();
}

int64_t TileMatmul::products() const {
    int64_t steps = 1;
    for (const auto& l : loops)
        steps *= l.extent;
    return steps * m_tiles * n_tiles * m * n * k * word_elements();
}

Stmt TileMatmul::to_stmt() const {
    check_fields(*this);
    std::vector<Expr> args = {c, a, b};
    for (int64_t v :
         {m, n, k, m_tiles, n_tiles, ldc, lda, ldb, c_m_tile, c_n_tile, a_m_tile, b_n_tile})
        args.push_back(Expr(v));
    for (const auto& l : loops)
        for (int64_t v : {l.extent, l.a_stride, l.b_stride})
            args.push_back(Expr(v));
    return Evaluate::make(Call::make(
        product == CallOp::Dot2BF16 ? CallOp::TileMatmulBF16 : CallOp::TileMatmulU8S8,
        std::move(args)));
}

TileMatmul TileMatmul::from_call(const Call& call) {
    TESSERA_CHECK(is_tile_matmul(call.op)) << "not a tile_matmul call";
    TESSERA_CHECK(call.args.size() >= kLoads + kFields &&
                  (call.args.size() - kLoads - kFields) % kPerLoop == 0)
        << "tile_matmul call with " << call.args.size() << " arguments";
    TileMatmul t;
    t.product = call.op == CallOp::TileMatmulBF16 ? CallOp::Dot2BF16 : CallOp::Dot4U8S8;
    t.c = call.args[0];
    t.a = call.args[1];
    t.b = call.args[2];
    int64_t* fields[kFields] = {&t.m,   &t.n,   &t.k,        &t.m_tiles,  &t.n_tiles,  &t.ldc,
                                &t.lda, &t.ldb, &t.c_m_tile, &t.c_n_tile, &t.a_m_tile, &t.b_n_tile};
    for (size_t i = 0; i < kFields; ++i)
        *fields[i] = int_arg(call, kLoads + i);
    for (size_t i = kLoads + kFields; i < call.args.size(); i += kPerLoop)
        t.loops.push_back({int_arg(call, i), int_arg(call, i + 1), int_arg(call, i + 2)});
    check_fields(t);
    return t;
}

Stmt TileMatmul::expand() const {
    check_fields(*this);
    const Load* cl = c.as<Load>();
    const Load* al = a.as<Load>();
    const Load* bl = b.as<Load>();
    Var mt("tile_mt"), nt("tile_nt"), i("tile_i"), j("tile_j"), w("tile_w");
    std::vector<Var> rs;
    Expr a_index =
        al->index + mt * Expr(a_m_tile) + i * Expr(lda) + w * Expr(a_elements_per_word());
    Expr b_index = bl->index + nt * Expr(b_n_tile) + w * Expr(ldb) + j;
    for (size_t l = 0; l < loops.size(); ++l) {
        rs.emplace_back("tile_r" + std::to_string(l));
        a_index = a_index + rs.back() * Expr(loops[l].a_stride);
        b_index = b_index + rs.back() * Expr(loops[l].b_stride);
    }
    Expr c_index = cl->index + mt * Expr(c_m_tile) + nt * Expr(c_n_tile) + i * Expr(ldc) + j;
    const Expr a_word = a_elements_per_word() > 1 ? bytes_as_word(Load::make(al->buffer, a_index))
                                                  : Load::make(al->buffer, a_index);
    const Expr b_word = Load::make(bl->buffer, b_index);
    const Expr dot = product == CallOp::Dot2BF16 ? dot2_bf16(a_word, b_word)
                                                 : dot4_u8s8(a_word, b_word);
    Stmt body = Store::make(cl->buffer, Load::make(cl->buffer, c_index) + dot, c_index);
    auto loop = [&](const Var& v, int64_t extent) {
        body = For::make(v, Expr(int64_t(0)), Expr(extent), ForKind::Serial, body);
    };
    loop(w, k);
    loop(j, n);
    loop(i, m);
    loop(nt, n_tiles);
    loop(mt, m_tiles);
    for (size_t l = loops.size(); l-- > 0;)
        loop(rs[l], loops[l].extent);
    return body;
}

} // namespace tessera::ir
