// WarpMma: the call's argument layout, its checks and the fragment coordinates.
#include "tessera/ir/warp_mma.h"

#include "tessera/support/error.h"

namespace tessera::ir {

const char* to_string(MmaKind k) {
    switch (k) {
    case MmaKind::F16:
        return "f16";
    case MmaKind::TF32:
        return "tf32";
    }
    return "?";
}

int64_t WarpMma::k_of(MmaKind k) { return k == MmaKind::F16 ? 16 : 8; }
int WarpMma::a_elements(MmaKind k) { return k == MmaKind::F16 ? 8 : 4; }
int WarpMma::b_elements(MmaKind k) { return k == MmaKind::F16 ? 4 : 2; }
DataType WarpMma::input_type(MmaKind k) {
    return k == MmaKind::F16 ? DataType::f16() : DataType::f32();
}
int64_t WarpMma::k_per_t(MmaKind k) { return k == MmaKind::F16 ? 2 : 1; }
int64_t WarpMma::a_row_half(MmaKind k, int q) { return k == MmaKind::F16 ? (q >> 1) & 1 : q & 1; }
int64_t WarpMma::a_k_offset(MmaKind k, int q) {
    return k == MmaKind::F16 ? (q & 1) + 8 * (q >> 2) : 4 * (q >> 1);
}
int64_t WarpMma::b_k_offset(MmaKind k, int q) {
    return k == MmaKind::F16 ? (q & 1) + 8 * (q >> 1) : 4 * q;
}

namespace {

void check_fields(const WarpMma& w) {
    TESSERA_CHECK(w.c.size() == 4 && w.a.size() == size_t(WarpMma::a_elements(w.kind)) &&
                  w.b.size() == size_t(WarpMma::b_elements(w.kind)))
        << "warp_mma " << to_string(w.kind) << " with " << w.c.size() << " accumulators, "
        << w.a.size() << " A and " << w.b.size() << " B elements";
    for (const Expr& c : w.c) {
        TESSERA_CHECK(c.defined() && c.as<Load>() && c.type() == DataType::f32())
            << "warp_mma accumulator is not a scalar f32 Load";
    }
    const DataType in = WarpMma::input_type(w.kind);
    for (const auto* part : {&w.a, &w.b})
        for (const Expr& e : *part)
            TESSERA_CHECK(e.defined() && e.type() == in)
                << "warp_mma " << to_string(w.kind) << " operand of type "
                << (e.defined() ? to_string(e.type()) : std::string("undefined"));
}

} // namespace

Stmt WarpMma::to_stmt() const {
    check_fields(*this);
    std::vector<Expr> args = {Expr(int64_t(kind))};
    args.insert(args.end(), c.begin(), c.end());
    args.insert(args.end(), a.begin(), a.end());
    args.insert(args.end(), b.begin(), b.end());
    return Evaluate::make(Call::make(CallOp::WarpMma, std::move(args)));
}

WarpMma WarpMma::from_call(const Call& call) {
    TESSERA_CHECK(call.op == CallOp::WarpMma && !call.args.empty()) << "not a warp_mma call";
    const IntImm* kind = call.args[0].as<IntImm>();
    TESSERA_CHECK(kind &&
                  (kind->value == int64_t(MmaKind::F16) || kind->value == int64_t(MmaKind::TF32)))
        << "warp_mma of an unknown kind";
    WarpMma w;
    w.kind = static_cast<MmaKind>(kind->value);
    const size_t na = a_elements(w.kind), nb = b_elements(w.kind);
    TESSERA_CHECK(call.args.size() == 1 + 4 + na + nb)
        << "warp_mma " << to_string(w.kind) << " with " << call.args.size() << " arguments";
    auto at = call.args.begin() + 1;
    w.c.assign(at, at + 4);
    w.a.assign(at + 4, at + 4 + na);
    w.b.assign(at + 4 + na, call.args.end());
    check_fields(w);
    return w;
}

} // namespace tessera::ir
