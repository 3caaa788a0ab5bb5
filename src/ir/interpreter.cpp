// The loop-IR interpreter. The function is first translated into a tree of evaluator objects
// (variables resolved to frame slots, buffers to slot numbers, types to small category codes), so
// that running it costs one virtual call per node and no map lookup per access.
#include "tessera/ir/interpreter.h"
#include "tessera/ir/tile_matmul.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "tessera/support/bfloat16.h"
#include "tessera/support/error.h"

namespace tessera::ir {

namespace {

/// One lane of a value: integers (all widths, bools) sign- or zero-extended into i, floats
/// (rounded to their type) in f.
union Lane {
    int64_t i;
    double f;
};

enum class Cat : uint8_t { Bool, SInt, UInt, Float };

Cat cat_of(DataType t) {
    if (t.is_float())
        return Cat::Float;
    if (t.is_bool())
        return Cat::Bool;
    if (t.is_int())
        return Cat::SInt;
    return Cat::UInt;
}

/// Brings an integer result back into its type's range (two's complement wrap).
inline int64_t wrap(int64_t v, Cat c, int bits) {
    switch (c) {
    case Cat::Bool:
        return v & 1;
    case Cat::SInt:
        return bits >= 64 ? v : (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
    case Cat::UInt:
        return bits >= 64 ? v : (int64_t)((uint64_t)v & ((uint64_t{1} << bits) - 1));
    case Cat::Float:
        return v;
    }
    return v;
}

uint16_t float_to_half(float value) {
    uint32_t x;
    std::memcpy(&x, &value, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            ++h;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        ++h; // a carry rounds up into inf: right
    return (uint16_t)(sign | h);
}

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float v = std::ldexp((float)mant, -24);
        return sign ? -v : v;
    }
    uint32_t x = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                           : (sign | ((exp + 112) << 23) | (mant << 13));
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/// ENode::bits of a bf16 value: f16 and bf16 are both 16 bits wide but round differently, and
/// bits is only read as a width for integers.
constexpr int kBFloat16Bits = -16;

/// Rounds a float result to its type's precision (bits as ENode::bits holds it).
inline double round_to(double v, int bits) {
    if (bits == kBFloat16Bits)
        return (double)bf16_bits_to_f32(f32_to_bf16_bits((float)v));
    if (bits == 32)
        return (double)(float)v;
    if (bits == 16)
        return (double)half_to_float(float_to_half((float)v));
    return v;
}

/// The memory representation of a buffer element.
enum class Mem : uint8_t { F16, BF16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool };

Mem mem_of(DataType t) {
    switch (cat_of(t)) {
    case Cat::Float:
        if (t.is_bfloat())
            return Mem::BF16;
        return t.bits == 16 ? Mem::F16 : t.bits == 32 ? Mem::F32 : Mem::F64;
    case Cat::Bool:
        return Mem::Bool;
    case Cat::SInt:
        return t.bits == 8 ? Mem::I8 : t.bits == 16 ? Mem::I16 : t.bits == 32 ? Mem::I32 : Mem::I64;
    case Cat::UInt:
        return t.bits == 8 ? Mem::U8 : t.bits == 16 ? Mem::U16 : t.bits == 32 ? Mem::U32 : Mem::U64;
    }
    return Mem::I64;
}

template <typename T> inline T load_as(const uint8_t* base, int64_t i) {
    T v;
    std::memcpy(&v, base + i * (int64_t)sizeof(T), sizeof(T));
    return v;
}
template <typename T> inline void store_as(uint8_t* base, int64_t i, T v) {
    std::memcpy(base + i * (int64_t)sizeof(T), &v, sizeof(T));
}

inline Lane mem_read(const uint8_t* base, int64_t i, Mem m) {
    Lane l{0};
    switch (m) {
    case Mem::F16:
        l.f = half_to_float(load_as<uint16_t>(base, i));
        break;
    case Mem::BF16:
        l.f = bf16_bits_to_f32(load_as<uint16_t>(base, i));
        break;
    case Mem::F32:
        l.f = load_as<float>(base, i);
        break;
    case Mem::F64:
        l.f = load_as<double>(base, i);
        break;
    case Mem::I8:
        l.i = load_as<int8_t>(base, i);
        break;
    case Mem::I16:
        l.i = load_as<int16_t>(base, i);
        break;
    case Mem::I32:
        l.i = load_as<int32_t>(base, i);
        break;
    case Mem::I64:
        l.i = load_as<int64_t>(base, i);
        break;
    case Mem::U8:
        l.i = load_as<uint8_t>(base, i);
        break;
    case Mem::U16:
        l.i = load_as<uint16_t>(base, i);
        break;
    case Mem::U32:
        l.i = load_as<uint32_t>(base, i);
        break;
    case Mem::U64:
        l.i = (int64_t)load_as<uint64_t>(base, i);
        break;
    case Mem::Bool:
        l.i = load_as<uint8_t>(base, i) != 0;
        break;
    }
    return l;
}

inline void mem_write(uint8_t* base, int64_t i, Mem m, Lane l) {
    switch (m) {
    case Mem::F16:
        store_as<uint16_t>(base, i, float_to_half((float)l.f));
        break;
    case Mem::BF16:
        store_as<uint16_t>(base, i, f32_to_bf16_bits((float)l.f));
        break;
    case Mem::F32:
        store_as<float>(base, i, (float)l.f);
        break;
    case Mem::F64:
        store_as<double>(base, i, l.f);
        break;
    case Mem::I8:
        store_as<int8_t>(base, i, (int8_t)l.i);
        break;
    case Mem::I16:
        store_as<int16_t>(base, i, (int16_t)l.i);
        break;
    case Mem::I32:
        store_as<int32_t>(base, i, (int32_t)l.i);
        break;
    case Mem::I64:
        store_as<int64_t>(base, i, l.i);
        break;
    case Mem::U8:
        store_as<uint8_t>(base, i, (uint8_t)l.i);
        break;
    case Mem::U16:
        store_as<uint16_t>(base, i, (uint16_t)l.i);
        break;
    case Mem::U32:
        store_as<uint32_t>(base, i, (uint32_t)l.i);
        break;
    case Mem::U64:
        store_as<uint64_t>(base, i, (uint64_t)l.i);
        break;
    case Mem::Bool:
        store_as<uint8_t>(base, i, (uint8_t)(l.i != 0));
        break;
    }
}

struct BufSlot {
    uint8_t* data = nullptr;
    int64_t size = 0; ///< Elements.
};

/// The run-time state: variable lanes (each variable owns a fixed range) and buffer bindings.
struct Frame {
    std::vector<Lane> vars;
    std::vector<BufSlot> bufs;
};

// ---------------------------------------------------------------------------------------------
// Expression evaluators. eval() returns a pointer to `lanes` lanes that stay valid until the
// node is evaluated again (its own storage, a constant, or a variable's frame slot).

struct ENode {
    explicit ENode(DataType t)
        : cat(cat_of(t)), bits(t.is_bfloat() ? kBFloat16Bits : t.bits), lanes(t.lanes),
          out(t.lanes) {}
    virtual ~ENode() = default;
    virtual const Lane* eval(Frame& fr) = 0;
    Cat cat;
    int bits;
    int lanes;
    std::vector<Lane> out;
};
using EPtr = std::unique_ptr<ENode>;

struct ConstNode : ENode {
    using ENode::ENode;
    const Lane* eval(Frame&) override { return out.data(); }
};

struct VarNode : ENode {
    VarNode(DataType t, int offset) : ENode(t), offset(offset) {}
    const Lane* eval(Frame& fr) override { return fr.vars.data() + offset; }
    int offset;
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, Mod, Min, Max };

inline int64_t floor_div(int64_t a, int64_t b) {
    if (b == -1)
        return (int64_t)(0 - (uint64_t)a); // INT64_MIN / -1 wraps
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        --q;
    return q;
}
inline int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1)
        return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0)))
        m += b;
    return m;
}

[[noreturn]] void division_by_zero(BinOp op) {
    TESSERA_UNREACHABLE() << "interpreter: integer " << (op == BinOp::Div ? "division" : "modulo")
                          << " by zero";
}

inline int64_t int_binop(BinOp op, int64_t a, int64_t b) {
    switch (op) {
    case BinOp::Add:
        return (int64_t)((uint64_t)a + (uint64_t)b);
    case BinOp::Sub:
        return (int64_t)((uint64_t)a - (uint64_t)b);
    case BinOp::Mul:
        return (int64_t)((uint64_t)a * (uint64_t)b);
    case BinOp::Div:
        if (b == 0)
            division_by_zero(op);
        return floor_div(a, b);
    case BinOp::Mod:
        if (b == 0)
            division_by_zero(op);
        return floor_mod(a, b);
    case BinOp::Min:
        return a < b ? a : b;
    case BinOp::Max:
        return a > b ? a : b;
    }
    return 0;
}

inline uint64_t u64_binop(BinOp op, uint64_t a, uint64_t b) {
    switch (op) {
    case BinOp::Add:
        return a + b;
    case BinOp::Sub:
        return a - b;
    case BinOp::Mul:
        return a * b;
    case BinOp::Div:
        if (b == 0)
            division_by_zero(op);
        return a / b;
    case BinOp::Mod:
        if (b == 0)
            division_by_zero(op);
        return a % b;
    case BinOp::Min:
        return a < b ? a : b;
    case BinOp::Max:
        return a > b ? a : b;
    }
    return 0;
}

inline double float_binop(BinOp op, double a, double b) {
    switch (op) {
    case BinOp::Add:
        return a + b;
    case BinOp::Sub:
        return a - b;
    case BinOp::Mul:
        return a * b;
    case BinOp::Div:
        return a / b;
    case BinOp::Mod:
        return a - b * std::floor(a / b);
    case BinOp::Min:
        return std::fmin(a, b);
    case BinOp::Max:
        return std::fmax(a, b);
    }
    return 0;
}

struct BinNode : ENode {
    BinNode(DataType t, BinOp op, EPtr a, EPtr b)
        : ENode(t), op(op), a(std::move(a)), b(std::move(b)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* x = a->eval(fr);
        const Lane* y = b->eval(fr);
        Lane* r = out.data();
        if (cat == Cat::Float) {
            for (int k = 0; k < lanes; ++k)
                r[k].f = round_to(float_binop(op, x[k].f, y[k].f), bits);
        } else if (cat == Cat::UInt && bits == 64) {
            for (int k = 0; k < lanes; ++k)
                r[k].i = (int64_t)u64_binop(op, (uint64_t)x[k].i, (uint64_t)y[k].i);
        } else {
            // Narrower unsigned values and bools are non-negative in i64, so the signed
            // operations give the same result before wrapping.
            for (int k = 0; k < lanes; ++k)
                r[k].i = wrap(int_binop(op, x[k].i, y[k].i), cat, bits);
        }
        return r;
    }
    BinOp op;
    EPtr a, b;
};

enum class CmpOp : uint8_t { EQ, NE, LT, LE, GT, GE };

template <typename T> inline bool compare(CmpOp op, T a, T b) {
    switch (op) {
    case CmpOp::EQ:
        return a == b;
    case CmpOp::NE:
        return a != b;
    case CmpOp::LT:
        return a < b;
    case CmpOp::LE:
        return a <= b;
    case CmpOp::GT:
        return a > b;
    case CmpOp::GE:
        return a >= b;
    }
    return false;
}

struct CmpNode : ENode {
    CmpNode(DataType t, DataType operand, CmpOp op, EPtr a, EPtr b)
        : ENode(t), operand_cat(cat_of(operand)), operand_bits(operand.bits), op(op),
          a(std::move(a)), b(std::move(b)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* x = a->eval(fr);
        const Lane* y = b->eval(fr);
        Lane* r = out.data();
        if (operand_cat == Cat::Float) {
            for (int k = 0; k < lanes; ++k)
                r[k].i = compare(op, x[k].f, y[k].f);
        } else if (operand_cat == Cat::UInt && operand_bits == 64) {
            for (int k = 0; k < lanes; ++k)
                r[k].i = compare(op, (uint64_t)x[k].i, (uint64_t)y[k].i);
        } else {
            for (int k = 0; k < lanes; ++k)
                r[k].i = compare(op, x[k].i, y[k].i);
        }
        return r;
    }
    Cat operand_cat;
    int operand_bits;
    CmpOp op;
    EPtr a, b;
};

enum class LogicOp : uint8_t { And, Or, Not };

struct LogicNode : ENode {
    LogicNode(DataType t, LogicOp op, EPtr a, EPtr b)
        : ENode(t), op(op), a(std::move(a)), b(std::move(b)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* x = a->eval(fr);
        Lane* r = out.data();
        if (op == LogicOp::Not) {
            for (int k = 0; k < lanes; ++k)
                r[k].i = !x[k].i;
            return r;
        }
        const Lane* y = b->eval(fr); // both sides are evaluated, like the other binary nodes
        for (int k = 0; k < lanes; ++k)
            r[k].i = op == LogicOp::And ? (x[k].i && y[k].i) : (x[k].i || y[k].i);
        return r;
    }
    LogicOp op;
    EPtr a, b;
};

struct SelectNode : ENode {
    SelectNode(DataType t, EPtr c, EPtr a, EPtr b)
        : ENode(t), c(std::move(c)), a(std::move(a)), b(std::move(b)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* cond = c->eval(fr);
        const Lane* x = a->eval(fr);
        const Lane* y = b->eval(fr);
        Lane* r = out.data();
        bool scalar_cond = c->lanes == 1;
        for (int k = 0; k < lanes; ++k)
            r[k] = cond[scalar_cond ? 0 : k].i ? x[k] : y[k];
        return r;
    }
    EPtr c, a, b;
};

struct CastNode : ENode {
    CastNode(DataType t, DataType from, EPtr v)
        : ENode(t), from_cat(cat_of(from)), from_bits(from.bits), v(std::move(v)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* x = v->eval(fr);
        Lane* r = out.data();
        for (int k = 0; k < lanes; ++k)
            r[k] = convert(x[k]);
        return r;
    }
    Lane convert(Lane x) const {
        Lane r{0};
        bool from_u64 = from_cat == Cat::UInt && from_bits == 64;
        switch (cat) {
        case Cat::Float:
            if (from_cat == Cat::Float)
                r.f = round_to(x.f, bits);
            else
                r.f = round_to(from_u64 ? (double)(uint64_t)x.i : (double)x.i, bits);
            return r;
        case Cat::Bool:
            r.i = from_cat == Cat::Float ? (x.f != 0) : (x.i != 0);
            return r;
        case Cat::SInt:
        case Cat::UInt:
            if (from_cat == Cat::Float) {
                // Truncate toward zero; saturate out-of-range values instead of hitting UB.
                double t = std::trunc(x.f);
                if (std::isnan(t))
                    r.i = 0;
                else if (cat == Cat::UInt && bits == 64 && t >= 9223372036854775808.0)
                    r.i = t >= 18446744073709551616.0 ? -1 : (int64_t)(uint64_t)t;
                else if (t >= 9223372036854775808.0)
                    r.i = std::numeric_limits<int64_t>::max();
                else if (t < -9223372036854775808.0)
                    r.i = std::numeric_limits<int64_t>::min();
                else
                    r.i = (int64_t)t;
            } else {
                r.i = x.i;
            }
            r.i = wrap(r.i, cat, bits);
            return r;
        }
        return r;
    }
    Cat from_cat;
    int from_bits;
    EPtr v;
};

/// Fails unless elements [i, i + count) lie in buffer b (`what` of buffer `name`).
void check_access(int64_t i, int64_t count, const BufSlot& b, const char* what,
                  const std::string& name) {
    if (i < 0 || i + count > b.size)
        TESSERA_UNREACHABLE() << "interpreter: out-of-bounds " << what << " of buffer '" << name
                              << "' at index " << i << " (size " << b.size << ")";
}

struct LoadNode : ENode {
    LoadNode(DataType t, int slot, Mem mem, std::string name, EPtr index)
        : ENode(t), slot(slot), mem(mem), name(std::move(name)), index(std::move(index)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* idx = index->eval(fr);
        const BufSlot& b = fr.bufs[slot];
        Lane* r = out.data();
        for (int k = 0; k < lanes; ++k) {
            const int64_t i = idx[k].i;
            check_access(i, 1, b, "load", name);
            r[k] = mem_read(b.data, i, mem);
        }
        return r;
    }
    int slot;
    Mem mem;
    std::string name;
    EPtr index;
};

/// CallOp::BytesAsWord of a Load: each lane's 4 bytes from its element on (elements of
/// `elem_bytes` each), little-endian.
struct BytesAsWordNode : ENode {
    BytesAsWordNode(DataType t, int slot, int elem_bytes, std::string name, EPtr index)
        : ENode(t), slot(slot), elem_bytes(elem_bytes), name(std::move(name)),
          index(std::move(index)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* idx = index->eval(fr);
        const BufSlot& b = fr.bufs[slot];
        Lane* r = out.data();
        for (int k = 0; k < lanes; ++k) {
            const int64_t i = idx[k].i;
            check_access(i, 4 / elem_bytes, b, "bytes_as_word", name);
            uint32_t w = 0;
            for (int j = 0; j < 4; ++j)
                w |= uint32_t(b.data[i * elem_bytes + j]) << (8 * j);
            r[k].i = int32_t(w);
        }
        return r;
    }
    int slot;
    int elem_bytes;
    std::string name;
    EPtr index;
};

struct RampNode : ENode {
    RampNode(DataType t, EPtr base, EPtr stride)
        : ENode(t), base(std::move(base)), stride(std::move(stride)) {}
    const Lane* eval(Frame& fr) override {
        Lane b = *base->eval(fr);
        Lane s = *stride->eval(fr);
        Lane* r = out.data();
        for (int k = 0; k < lanes; ++k) {
            if (cat == Cat::Float)
                r[k].f = round_to(b.f + round_to(k * s.f, bits), bits);
            else
                r[k].i = wrap(int_binop(BinOp::Add, b.i, int_binop(BinOp::Mul, k, s.i)), cat, bits);
        }
        return r;
    }
    EPtr base, stride;
};

struct BroadcastNode : ENode {
    BroadcastNode(DataType t, EPtr v) : ENode(t), v(std::move(v)) {}
    const Lane* eval(Frame& fr) override {
        Lane x = *v->eval(fr);
        for (auto& l : out)
            l = x;
        return out.data();
    }
    EPtr v;
};

struct VectorReduceNode : ENode {
    VectorReduceNode(DataType t, ReduceOp op, EPtr v) : ENode(t), op(op), v(std::move(v)) {}
    const Lane* eval(Frame& fr) override {
        const Lane* x = v->eval(fr);
        int group = v->lanes / lanes;
        BinOp bop = op == ReduceOp::Sum   ? BinOp::Add
                    : op == ReduceOp::Max ? BinOp::Max
                                          : BinOp::Min;
        Lane* r = out.data();
        for (int k = 0; k < lanes; ++k) {
            Lane acc = x[k * group];
            for (int j = 1; j < group; ++j) {
                Lane y = x[k * group + j];
                if (cat == Cat::Float)
                    acc.f = round_to(float_binop(bop, acc.f, y.f), bits);
                else if (cat == Cat::UInt && bits == 64)
                    acc.i = (int64_t)u64_binop(bop, (uint64_t)acc.i, (uint64_t)y.i);
                else
                    acc.i = wrap(int_binop(bop, acc.i, y.i), cat, bits);
            }
            r[k] = acc;
        }
        return r;
    }
    ReduceOp op;
    EPtr v;
};

/// Byte j of a (unsigned) times byte j of b (signed), summed over j < 4 (CallOp::Dot4U8S8).
/// At most 4 * 255 * 128 in magnitude, so the i32 result is exact.
int64_t dot4_u8s8(uint32_t a, uint32_t b) {
    int64_t sum = 0;
    for (int j = 0; j < 4; ++j)
        sum += int64_t((a >> (8 * j)) & 0xff) * int64_t(int8_t(uint8_t(b >> (8 * j))));
    return sum;
}

struct CallNode : ENode {
    CallNode(DataType t, CallOp op, std::vector<EPtr> args)
        : ENode(t), op(op), args(std::move(args)) {}
    const Lane* eval(Frame& fr) override {
        Lane* r = out.data();
        if (op == CallOp::Prefetch) {
            r[0].i = 0;
            return r;
        }
        const Lane* x = args[0]->eval(fr);
        const Lane* y = args.size() > 1 ? args[1]->eval(fr) : nullptr;
        if (op == CallOp::Dot4U8S8) {
            for (int k = 0; k < lanes; ++k)
                r[k].i = dot4_u8s8((uint32_t)x[k].i, (uint32_t)y[k].i);
            return r;
        }
        if (op == CallOp::Dot2BF16) {
            for (int k = 0; k < lanes; ++k)
                r[k].f = tessera::dot2_bf16((uint32_t)x[k].i, (uint32_t)y[k].i);
            return r;
        }
        for (int k = 0; k < lanes; ++k) {
            if (cat != Cat::Float) { // only Abs (and Dot4U8S8, above) are valid on integers
                int64_t v = x[k].i;
                r[k].i =
                    wrap(cat == Cat::SInt && v < 0 ? (int64_t)(0 - (uint64_t)v) : v, cat, bits);
                continue;
            }
            double v = x[k].f, res = 0;
            switch (op) {
            case CallOp::Exp:
                res = std::exp(v);
                break;
            case CallOp::Log:
                res = std::log(v);
                break;
            case CallOp::Sqrt:
                res = std::sqrt(v);
                break;
            case CallOp::Tanh:
                res = std::tanh(v);
                break;
            case CallOp::Erf:
                res = std::erf(v);
                break;
            case CallOp::Abs:
                res = std::fabs(v);
                break;
            case CallOp::Floor:
                res = std::floor(v);
                break;
            case CallOp::RoundEven:
                res = std::nearbyint(v);
                break;
            case CallOp::Ceil:
                res = std::ceil(v);
                break;
            case CallOp::Pow:
                res = std::pow(v, y[k].f);
                break;
            case CallOp::Ldexp:
                res = std::ldexp(v, static_cast<int>(y[k].i));
                break;
            case CallOp::Prefetch:
            case CallOp::Dot4U8S8:
            case CallOp::Dot2BF16:
            case CallOp::TileMatmulU8S8: // an Evaluate of it runs its loops (stmt())
            case CallOp::TileMatmulBF16:
            case CallOp::BytesAsWord:    // BytesAsWordNode
                break;
            case CallOp::GpuBlockSum:
            case CallOp::GpuBlockMax:
            case CallOp::GpuBlockMin:
            case CallOp::WarpMma:
                TESSERA_UNREACHABLE() << to_string(op) << " needs GPU threads";
            }
            r[k].f = round_to(res, bits);
        }
        return r;
    }
    CallOp op;
    std::vector<EPtr> args;
};

/// Binds a variable around the evaluation of a body, restoring the previous lanes afterwards
/// (so a variable rebound inside its own scope behaves).
struct Binding {
    int offset;
    int lanes;
    std::vector<Lane> saved;
    void enter(Frame& fr, const Lane* value) {
        Lane* slot = fr.vars.data() + offset;
        std::copy(slot, slot + lanes, saved.begin());
        std::copy(value, value + lanes, slot);
    }
    void leave(Frame& fr) { std::copy(saved.begin(), saved.end(), fr.vars.data() + offset); }
};

struct LetNode : ENode {
    LetNode(DataType t, Binding bind, EPtr value, EPtr body)
        : ENode(t), bind(std::move(bind)), value(std::move(value)), body(std::move(body)) {}
    const Lane* eval(Frame& fr) override {
        bind.enter(fr, value->eval(fr));
        const Lane* r = body->eval(fr);
        std::copy(r, r + lanes, out.begin()); // r may be the slot that leave() restores
        bind.leave(fr);
        return out.data();
    }
    Binding bind;
    EPtr value, body;
};

// ---------------------------------------------------------------------------------------------
// Statement executors.

struct SNode {
    virtual ~SNode() = default;
    virtual void exec(Frame& fr) = 0;
};
using SPtr = std::unique_ptr<SNode>;

struct StoreNode : SNode {
    StoreNode(int slot, Mem mem, std::string name, EPtr value, EPtr index)
        : slot(slot), mem(mem), name(std::move(name)), value(std::move(value)),
          index(std::move(index)) {}
    void exec(Frame& fr) override {
        const Lane* v = value->eval(fr);
        const Lane* idx = index->eval(fr);
        const BufSlot& b = fr.bufs[slot];
        for (int k = 0; k < value->lanes; ++k) {
            int64_t i = idx[k].i;
            if (i < 0 || i >= b.size)
                TESSERA_UNREACHABLE() << "interpreter: out-of-bounds store to buffer '" << name
                                      << "' at index " << i << " (size " << b.size << ")";
            mem_write(b.data, i, mem, v[k]);
        }
    }
    int slot;
    Mem mem;
    std::string name;
    EPtr value, index;
};

struct ForNode : SNode {
    ForNode(Binding bind, EPtr min, EPtr extent, SPtr body)
        : bind(std::move(bind)), min(std::move(min)), extent(std::move(extent)),
          body(std::move(body)) {}
    void exec(Frame& fr) override {
        int64_t lo = min->eval(fr)->i;
        int64_t n = extent->eval(fr)->i;
        Lane start;
        start.i = lo;
        bind.enter(fr, &start);
        Lane& v = fr.vars[bind.offset];
        for (int64_t k = 0; k < n; ++k) {
            v.i = lo + k;
            body->exec(fr);
        }
        bind.leave(fr);
    }
    Binding bind;
    EPtr min, extent;
    SPtr body;
};

struct LetStmtNode : SNode {
    LetStmtNode(Binding bind, EPtr value, SPtr body)
        : bind(std::move(bind)), value(std::move(value)), body(std::move(body)) {}
    void exec(Frame& fr) override {
        bind.enter(fr, value->eval(fr));
        body->exec(fr);
        bind.leave(fr);
    }
    Binding bind;
    EPtr value;
    SPtr body;
};

struct AllocateNode : SNode {
    AllocateNode(int slot, int64_t elements, int bytes, SPtr body)
        : slot(slot), elements(elements), storage((size_t)(elements * bytes)),
          body(std::move(body)) {}
    void exec(Frame& fr) override {
        std::memset(storage.data(), 0xff, storage.size());
        fr.bufs[slot] = BufSlot{storage.data(), elements};
        body->exec(fr);
        fr.bufs[slot] = BufSlot{};
    }
    int slot;
    int64_t elements;
    std::vector<uint8_t> storage;
    SPtr body;
};

struct IfNode : SNode {
    IfNode(EPtr c, SPtr t, SPtr e) : c(std::move(c)), t(std::move(t)), e(std::move(e)) {}
    void exec(Frame& fr) override {
        if (c->eval(fr)->i)
            t->exec(fr);
        else if (e)
            e->exec(fr);
    }
    EPtr c;
    SPtr t, e;
};

struct SeqNode : SNode {
    explicit SeqNode(std::vector<SPtr> stmts) : stmts(std::move(stmts)) {}
    void exec(Frame& fr) override {
        for (auto& s : stmts)
            s->exec(fr);
    }
    std::vector<SPtr> stmts;
};

struct EvaluateNode : SNode {
    explicit EvaluateNode(EPtr v) : v(std::move(v)) {}
    void exec(Frame& fr) override { v->eval(fr); }
    EPtr v;
};

// ---------------------------------------------------------------------------------------------
// Translation from IR to evaluators.

class Translator {
  public:
    int num_var_lanes = 0;
    int num_bufs = 0;

    /// Makes `b` visible (a param or an Allocate); returns its slot.
    int bind_buffer(const Buffer& b) {
        TESSERA_CHECK(!buf_in_scope_.count(b.get()))
            << "interpreter: buffer '" << b.name() << "' allocated while already in scope";
        buf_in_scope_.insert(b.get());
        auto it = buf_slot_.find(b.get());
        if (it != buf_slot_.end())
            return it->second;
        buf_slot_.emplace(b.get(), num_bufs);
        return num_bufs++;
    }
    void unbind_buffer(const Buffer& b) { buf_in_scope_.erase(b.get()); }

    EPtr expr(const Expr& e);
    SPtr stmt(const Stmt& s);

  private:
    std::unordered_map<const Variable*, int> var_offset_;
    std::unordered_map<const Variable*, int> var_depth_; ///< How many enclosing bindings.
    std::unordered_map<const BufferNode*, int> buf_slot_;
    std::unordered_set<const BufferNode*> buf_in_scope_;

    Binding bind_var(const Var& v) {
        auto it = var_offset_.find(v.get());
        int offset;
        if (it == var_offset_.end()) {
            offset = num_var_lanes;
            num_var_lanes += v.type().lanes;
            var_offset_.emplace(v.get(), offset);
        } else {
            offset = it->second;
        }
        ++var_depth_[v.get()];
        return Binding{offset, v.type().lanes, std::vector<Lane>(v.type().lanes)};
    }
    void unbind_var(const Var& v) { --var_depth_[v.get()]; }

    int buffer_slot(const Buffer& b, const char* what) {
        TESSERA_CHECK(buf_in_scope_.count(b.get()))
            << "interpreter: " << what << " of buffer '" << b.name()
            << "' that is neither a parameter nor allocated around it";
        return buf_slot_.at(b.get());
    }

    template <typename T> EPtr binary(const T* op, BinOp bop) {
        return std::make_unique<BinNode>(op->type, bop, expr(op->a), expr(op->b));
    }
    template <typename T> EPtr cmp(const T* op, CmpOp c) {
        return std::make_unique<CmpNode>(op->type, op->a.type(), c, expr(op->a), expr(op->b));
    }
};

EPtr Translator::expr(const Expr& e) {
    TESSERA_CHECK(e.defined()) << "interpreter: undefined expression";
    switch (e.node_type()) {
    case IRNodeType::IntImm: {
        auto n = std::make_unique<ConstNode>(e.type());
        n->out[0].i = e.as<IntImm>()->value;
        return n;
    }
    case IRNodeType::FloatImm: {
        auto n = std::make_unique<ConstNode>(e.type());
        n->out[0].f = e.as<FloatImm>()->value;
        return n;
    }
    case IRNodeType::Variable: {
        const auto* v = e.as<Variable>();
        auto it = var_depth_.find(v);
        TESSERA_CHECK(it != var_depth_.end() && it->second > 0)
            << "interpreter: free variable '" << v->name << "'";
        return std::make_unique<VarNode>(e.type(), var_offset_.at(v));
    }
    case IRNodeType::Cast: {
        const auto* op = e.as<Cast>();
        return std::make_unique<CastNode>(op->type, op->value.type(), expr(op->value));
    }
    case IRNodeType::Add:
        return binary(e.as<Add>(), BinOp::Add);
    case IRNodeType::Sub:
        return binary(e.as<Sub>(), BinOp::Sub);
    case IRNodeType::Mul:
        return binary(e.as<Mul>(), BinOp::Mul);
    case IRNodeType::Div:
        return binary(e.as<Div>(), BinOp::Div);
    case IRNodeType::Mod:
        return binary(e.as<Mod>(), BinOp::Mod);
    case IRNodeType::Min:
        return binary(e.as<Min>(), BinOp::Min);
    case IRNodeType::Max:
        return binary(e.as<Max>(), BinOp::Max);
    case IRNodeType::EQ:
        return cmp(e.as<EQ>(), CmpOp::EQ);
    case IRNodeType::NE:
        return cmp(e.as<NE>(), CmpOp::NE);
    case IRNodeType::LT:
        return cmp(e.as<LT>(), CmpOp::LT);
    case IRNodeType::LE:
        return cmp(e.as<LE>(), CmpOp::LE);
    case IRNodeType::GT:
        return cmp(e.as<GT>(), CmpOp::GT);
    case IRNodeType::GE:
        return cmp(e.as<GE>(), CmpOp::GE);
    case IRNodeType::And: {
        const auto* op = e.as<And>();
        return std::make_unique<LogicNode>(op->type, LogicOp::And, expr(op->a), expr(op->b));
    }
    case IRNodeType::Or: {
        const auto* op = e.as<Or>();
        return std::make_unique<LogicNode>(op->type, LogicOp::Or, expr(op->a), expr(op->b));
    }
    case IRNodeType::Not: {
        const auto* op = e.as<Not>();
        return std::make_unique<LogicNode>(op->type, LogicOp::Not, expr(op->a), nullptr);
    }
    case IRNodeType::Select: {
        const auto* op = e.as<Select>();
        return std::make_unique<SelectNode>(op->type, expr(op->condition), expr(op->true_value),
                                            expr(op->false_value));
    }
    case IRNodeType::Load: {
        const auto* op = e.as<Load>();
        int slot = buffer_slot(op->buffer, "load");
        return std::make_unique<LoadNode>(op->type, slot, mem_of(op->buffer.dtype()),
                                          op->buffer.name(), expr(op->index));
    }
    case IRNodeType::Ramp: {
        const auto* op = e.as<Ramp>();
        return std::make_unique<RampNode>(op->type, expr(op->base), expr(op->stride));
    }
    case IRNodeType::Broadcast: {
        const auto* op = e.as<Broadcast>();
        return std::make_unique<BroadcastNode>(op->type, expr(op->value));
    }
    case IRNodeType::VectorReduce: {
        const auto* op = e.as<VectorReduce>();
        return std::make_unique<VectorReduceNode>(op->type, op->op, expr(op->value));
    }
    case IRNodeType::Call: {
        const auto* op = e.as<Call>();
        if (op->op == CallOp::BytesAsWord) {
            const Load* l = op->args[0].as<Load>();
            TESSERA_CHECK(l) << "interpreter: bytes_as_word of a non-Load";
            return std::make_unique<BytesAsWordNode>(op->type, buffer_slot(l->buffer, "load"),
                                                     l->type.bytes(), l->buffer.name(),
                                                     expr(l->index));
        }
        std::vector<EPtr> args;
        if (op->op != CallOp::Prefetch) // a prefetch may point past the end; never evaluated
            for (const auto& a : op->args)
                args.push_back(expr(a));
        return std::make_unique<CallNode>(op->type, op->op, std::move(args));
    }
    case IRNodeType::Let: {
        const auto* op = e.as<Let>();
        EPtr value = expr(op->value);
        Binding b = bind_var(op->var);
        EPtr body = expr(op->body);
        unbind_var(op->var);
        return std::make_unique<LetNode>(op->type, std::move(b), std::move(value), std::move(body));
    }
    case IRNodeType::TensorRead:
    case IRNodeType::Reduce:
        TESSERA_UNREACHABLE() << "interpreter: " << node_type_name(e.node_type())
                              << " left in lowered code";
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "interpreter: statement node in expression position";
}

SPtr Translator::stmt(const Stmt& s) {
    TESSERA_CHECK(s.defined()) << "interpreter: undefined statement";
    switch (s.node_type()) {
    case IRNodeType::LetStmt: {
        const auto* op = s.as<LetStmt>();
        EPtr value = expr(op->value);
        Binding b = bind_var(op->var);
        SPtr body = stmt(op->body);
        unbind_var(op->var);
        return std::make_unique<LetStmtNode>(std::move(b), std::move(value), std::move(body));
    }
    case IRNodeType::For: {
        const auto* op = s.as<For>();
        EPtr min = expr(op->min), extent = expr(op->extent);
        Binding b = bind_var(op->loop_var);
        SPtr body = stmt(op->body);
        unbind_var(op->loop_var);
        return std::make_unique<ForNode>(std::move(b), std::move(min), std::move(extent),
                                         std::move(body));
    }
    case IRNodeType::Store: {
        const auto* op = s.as<Store>();
        int slot = buffer_slot(op->buffer, "store");
        return std::make_unique<StoreNode>(slot, mem_of(op->buffer.dtype()), op->buffer.name(),
                                           expr(op->value), expr(op->index));
    }
    case IRNodeType::Allocate: {
        const auto* op = s.as<Allocate>();
        int slot = bind_buffer(op->buffer);
        SPtr body = stmt(op->body);
        unbind_buffer(op->buffer);
        return std::make_unique<AllocateNode>(slot, op->buffer->num_elements(),
                                              op->buffer.dtype().bytes(), std::move(body));
    }
    case IRNodeType::IfThenElse: {
        const auto* op = s.as<IfThenElse>();
        EPtr c = expr(op->condition);
        SPtr t = stmt(op->then_case);
        SPtr e = op->else_case.defined() ? stmt(op->else_case) : nullptr;
        return std::make_unique<IfNode>(std::move(c), std::move(t), std::move(e));
    }
    case IRNodeType::Seq: {
        std::vector<SPtr> stmts;
        for (const auto& x : s.as<Seq>()->stmts)
            stmts.push_back(stmt(x));
        return std::make_unique<SeqNode>(std::move(stmts));
    }
    case IRNodeType::Evaluate: {
        // A tile matmul runs as the loops it stands for.
        const Call* call = s.as<Evaluate>()->value.as<Call>();
        if (call && is_tile_matmul(call->op))
            return stmt(TileMatmul::from_call(*call).expand());
        return std::make_unique<EvaluateNode>(expr(s.as<Evaluate>()->value));
    }
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
    break;
    }
    TESSERA_UNREACHABLE() << "interpreter: expression node in statement position";
}

} // namespace

struct Interpreter::Impl {
    std::string name;
    std::vector<Buffer> params;
    std::vector<int> param_slots;
    SPtr body;
    Frame frame;
};

Interpreter::Interpreter(const LoweredFunc& f) : impl_(std::make_unique<Impl>()) {
    impl_->name = f.name;
    impl_->params = f.params;
    Translator tr;
    for (const Buffer& b : f.params) {
        TESSERA_CHECK(b.defined()) << "interpreter: undefined parameter of '" << f.name << "'";
        impl_->param_slots.push_back(tr.bind_buffer(b));
    }
    impl_->body = tr.stmt(f.body);
    impl_->frame.vars.assign((size_t)tr.num_var_lanes, Lane{0});
    impl_->frame.bufs.assign((size_t)tr.num_bufs, BufSlot{});
}

Interpreter::~Interpreter() = default;

void Interpreter::run(const std::vector<void*>& args) {
    TESSERA_CHECK(args.size() == impl_->params.size())
        << "interpreter: '" << impl_->name << "' takes " << impl_->params.size()
        << " arguments, got " << args.size();
    for (size_t i = 0; i < args.size(); ++i) {
        TESSERA_CHECK(args[i]) << "interpreter: null argument for parameter '"
                               << impl_->params[i].name() << "'";
        impl_->frame.bufs[impl_->param_slots[i]] =
            BufSlot{static_cast<uint8_t*>(args[i]), impl_->params[i]->num_elements()};
    }
    impl_->body->exec(impl_->frame);
}

void interpret(const LoweredFunc& f, const std::vector<void*>& args) { Interpreter(f).run(args); }

} // namespace tessera::ir
