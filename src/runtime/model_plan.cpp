// The plan of a built model: validation and its versioned byte encoding.
//
// The encoding is little-endian and field by field (no padding, no host struct layout), so a
// plan written by the compiler on one machine reads the same in a model library anywhere:
//   "TSRPLAN\0" u32 version, then the ModelPlan fields in declaration order; a string is u32
//   length + bytes, a vector is u32 count + elements, integers are fixed width; last the u64
//   content_checksum of all the bytes before it.
#include "tessera/runtime/model_plan.h"

#include "tessera/runtime/checksum.h"

#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

namespace tessera::runtime {

namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'P', 'L', 'A', 'N', '\0'};

/// Longest string or vector the parser accepts: guards against allocating gigabytes for a
/// corrupt length before the truncation check would catch it.
constexpr uint32_t kMaxCount = 1u << 28;

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

void validate_cuda_fields(const ModelPlan& plan); // below validate_plan

bool valid_dtype(PlanDType t) {
    const auto v = static_cast<int32_t>(t);
    return v >= static_cast<int32_t>(PlanDType::F32) && v <= static_cast<int32_t>(PlanDType::U2);
}

bool is_integer_dtype(PlanDType t) {
    switch (t) {
    case PlanDType::I8:
    case PlanDType::U8:
    case PlanDType::I16:
    case PlanDType::U16:
    case PlanDType::I32:
    case PlanDType::U32:
    case PlanDType::I64:
    case PlanDType::U64:
        return true;
    default:
        return false;
    }
}

bool valid_storage(TensorStorage s) {
    const auto v = static_cast<int32_t>(s);
    return v >= static_cast<int32_t>(TensorStorage::Input) &&
           v <= static_cast<int32_t>(TensorStorage::Arena);
}

const char* storage_name(TensorStorage s) {
    switch (s) {
    case TensorStorage::Input:
        return "input";
    case TensorStorage::Output:
        return "output";
    case TensorStorage::Weight:
        return "weight";
    case TensorStorage::Arena:
        return "arena";
    }
    return "?";
}

std::string tensor_label(const ModelPlan& plan, size_t id) {
    return "tensor " + std::to_string(id) + " '" + plan.tensors[id].name + "'";
}

/// product(shape) * element size; throws on a negative extent or overflow.
int64_t dense_bytes(const ModelPlan& plan, size_t id) {
    const PlanTensor& t = plan.tensors[id];
    int64_t n = plan_dtype_bytes(t.dtype);
    for (int64_t d : t.shape) {
        if (d < 0)
            fail(tensor_label(plan, id) + " has a negative extent " + std::to_string(d));
        if (d != 0 && n > INT64_MAX / d)
            fail(tensor_label(plan, id) + " is too large");
        n *= d;
    }
    return n;
}

/// Checks that the model inputs (or outputs) list names tensors of `storage` whose offsets are
/// exactly their positions 0..n-1.
void validate_io_list(const ModelPlan& plan, const std::vector<int32_t>& ids, TensorStorage storage,
                      const char* what) {
    for (size_t i = 0; i < ids.size(); ++i) {
        const int32_t id = ids[i];
        if (id < 0 || static_cast<size_t>(id) >= plan.tensors.size())
            fail(std::string("model ") + what + " " + std::to_string(i) + " is tensor " +
                 std::to_string(id) + ", out of range [0, " + std::to_string(plan.tensors.size()) +
                 ")");
        const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
        if (t.storage != storage)
            fail(std::string("model ") + what + " " + std::to_string(i) + " (" +
                 tensor_label(plan, static_cast<size_t>(id)) + ") has storage " +
                 storage_name(t.storage) + ", expected " + storage_name(storage));
        if (t.offset != static_cast<int64_t>(i))
            fail(std::string("model ") + what + " " + std::to_string(i) + " (" +
                 tensor_label(plan, static_cast<size_t>(id)) + ") has offset " +
                 std::to_string(t.offset) + ", expected " + std::to_string(i));
    }
}

// ---- encoding -----------------------------------------------------------------------------

class Writer {
  public:
    void bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
    void u32(uint32_t v) {
        unsigned char b[4];
        for (int i = 0; i < 4; ++i)
            b[i] = static_cast<unsigned char>(v >> (8 * i));
        bytes(b, 4);
    }
    void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
    void i64(int64_t v) {
        const auto u = static_cast<uint64_t>(v);
        unsigned char b[8];
        for (int i = 0; i < 8; ++i)
            b[i] = static_cast<unsigned char>(u >> (8 * i));
        bytes(b, 8);
    }
    void count(size_t n) {
        if (n > kMaxCount)
            fail("plan list of " + std::to_string(n) + " entries is too long");
        u32(static_cast<uint32_t>(n));
    }
    void str(const std::string& s) {
        count(s.size());
        bytes(s.data(), s.size());
    }
    std::string take() { return std::move(out_); }

  private:
    std::string out_;
};

class Reader {
  public:
    Reader(const unsigned char* p, size_t n) : p_(p), n_(n) {}

    void bytes(void* dst, size_t n, const char* what) {
        need(n, what);
        std::memcpy(dst, p_ + pos_, n);
        pos_ += n;
    }
    uint32_t u32(const char* what) {
        need(4, what);
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v |= static_cast<uint32_t>(p_[pos_ + i]) << (8 * i);
        pos_ += 4;
        return v;
    }
    int32_t i32(const char* what) { return static_cast<int32_t>(u32(what)); }
    int64_t i64(const char* what) {
        need(8, what);
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v |= static_cast<uint64_t>(p_[pos_ + i]) << (8 * i);
        pos_ += 8;
        return static_cast<int64_t>(v);
    }
    /// A list length; also rejects a length that could not fit in the remaining bytes, given
    /// that each element takes at least `min_element_bytes`.
    size_t count(const char* what, size_t min_element_bytes) {
        const uint32_t n = u32(what);
        if (n > kMaxCount || static_cast<uint64_t>(n) * min_element_bytes > n_ - pos_)
            fail(std::string("model plan is truncated or malformed: ") + what + " count " +
                 std::to_string(n) + " at byte " + std::to_string(pos_ - 4) + " exceeds the " +
                 std::to_string(n_ - pos_) + " bytes left");
        return n;
    }
    std::string str(const char* what) {
        std::string s(count(what, 1), '\0');
        bytes(s.data(), s.size(), what);
        return s;
    }
    size_t pos() const { return pos_; }
    size_t size() const { return n_; }

  private:
    void need(size_t n, const char* what) const {
        if (n > n_ - pos_)
            fail(std::string("model plan is truncated: ") + what + " needs " + std::to_string(n) +
                 " bytes at byte " + std::to_string(pos_) + " of " + std::to_string(n_));
    }

    const unsigned char* p_;
    size_t n_;
    size_t pos_ = 0;
};

std::vector<int32_t> read_ids(Reader& r, const char* what) {
    std::vector<int32_t> v(r.count(what, 4));
    for (int32_t& x : v)
        x = r.i32(what);
    return v;
}

void write_ids(Writer& w, const std::vector<int32_t>& v) {
    w.count(v.size());
    for (int32_t x : v)
        w.i32(x);
}

} // namespace

// Name and size of each PlanDType, indexed by its value.
struct PlanDTypeRow {
    const char* name;
    int64_t bytes;
};
static const PlanDTypeRow kPlanDTypes[] = {
    {"?", 0},  {"f32", 4}, {"f64", 8}, {"i32", 4}, {"i64", 8}, {"bool", 1}, {"f16", 2},
    {"i8", 1}, {"u8", 1},  {"i16", 2}, {"u16", 2}, {"u32", 4}, {"u64", 8}, {"bf16", 2},
    {"f8e4m3fn", 1}, {"f8e4m3fnuz", 1}, {"f8e5m2", 1}, {"f8e5m2fnuz", 1}, {"f4e2m1", 1},
    {"i4", 1}, {"u4", 1}, {"i2", 1}, {"u2", 1},
};
static_assert(std::size(kPlanDTypes) == static_cast<size_t>(PlanDType::U2) + 1,
              "one row per PlanDType");

int64_t plan_dtype_bytes(PlanDType t) {
    if (!valid_dtype(t))
        fail("unknown plan dtype " + std::to_string(static_cast<int32_t>(t)));
    return kPlanDTypes[static_cast<int32_t>(t)].bytes;
}

const char* plan_target_name(PlanTarget t) {
    switch (t) {
    case PlanTarget::Cpu:
        return "cpu";
    case PlanTarget::Cuda:
        return "cuda";
    }
    return "?";
}

const char* plan_dtype_name(PlanDType t) {
    return valid_dtype(t) ? kPlanDTypes[static_cast<int32_t>(t)].name : "?";
}

void validate_plan(const ModelPlan& plan) {
    if (plan.arena_bytes < 0)
        fail("plan arena_bytes " + std::to_string(plan.arena_bytes) + " < 0");
    if (plan.weight_bytes < 0)
        fail("plan weight_bytes " + std::to_string(plan.weight_bytes) + " < 0");
    for (size_t id = 0; id < plan.tensors.size(); ++id) {
        const PlanTensor& t = plan.tensors[id];
        if (!valid_dtype(t.dtype))
            fail(tensor_label(plan, id) + " has an unknown dtype " +
                 std::to_string(static_cast<int32_t>(t.dtype)));
        if (!valid_storage(t.storage))
            fail(tensor_label(plan, id) + " has an unknown storage " +
                 std::to_string(static_cast<int32_t>(t.storage)));
        const int64_t dense = dense_bytes(plan, id);
        if (t.bytes < dense)
            fail(tensor_label(plan, id) + " holds " + std::to_string(t.bytes) +
                 " bytes, less than its shape needs (" + std::to_string(dense) + ")");
        if (t.storage == TensorStorage::Weight || t.storage == TensorStorage::Arena) {
            const bool weight = t.storage == TensorStorage::Weight;
            const int64_t limit = weight ? plan.weight_bytes : plan.arena_bytes;
            if (t.offset < 0 || t.offset % 64 != 0)
                fail(tensor_label(plan, id) + " has " + storage_name(t.storage) + " offset " +
                     std::to_string(t.offset) + ", not a non-negative multiple of 64");
            if (t.offset > limit || t.bytes > limit - t.offset)
                fail(tensor_label(plan, id) + " [" + std::to_string(t.offset) + ", " +
                     std::to_string(t.offset + t.bytes) + ") lies outside the " +
                     (weight ? "weights" : "arena") + " of " + std::to_string(limit) + " bytes");
        } else if (t.bytes != dense) {
            // The caller passes dense buffers: no padded layout for inputs and outputs.
            fail(tensor_label(plan, id) + " is a model " + storage_name(t.storage) + " of " +
                 std::to_string(t.bytes) + " bytes, but its shape needs " + std::to_string(dense));
        }
    }
    validate_io_list(plan, plan.inputs, TensorStorage::Input, "input");
    validate_io_list(plan, plan.outputs, TensorStorage::Output, "output");
    // Every Input/Output tensor must be listed (its offset indexes the caller's array).
    for (size_t id = 0; id < plan.tensors.size(); ++id) {
        const PlanTensor& t = plan.tensors[id];
        const std::vector<int32_t>* list = t.storage == TensorStorage::Input    ? &plan.inputs
                                           : t.storage == TensorStorage::Output ? &plan.outputs
                                                                                : nullptr;
        if (!list)
            continue;
        if (t.offset < 0 || static_cast<size_t>(t.offset) >= list->size() ||
            (*list)[static_cast<size_t>(t.offset)] != static_cast<int32_t>(id))
            fail(tensor_label(plan, id) + " has storage " + storage_name(t.storage) +
                 " but is not model " + storage_name(t.storage) + " " + std::to_string(t.offset));
    }
    std::vector<bool> checked(plan.inputs.size(), false);
    for (const PlanIndexCheck& c : plan.index_checks) {
        const std::string where = "index check of input " + std::to_string(c.input);
        if (c.input < 0 || static_cast<size_t>(c.input) >= plan.inputs.size())
            fail(where + ": out of range [0, " + std::to_string(plan.inputs.size()) + ")");
        if (checked[static_cast<size_t>(c.input)])
            fail(where + ": the input is checked twice");
        checked[static_cast<size_t>(c.input)] = true;
        const PlanDType t =
            plan.tensors[static_cast<size_t>(plan.inputs[static_cast<size_t>(c.input)])].dtype;
        if (!is_integer_dtype(t))
            fail(where + ": the input is " + plan_dtype_name(t) + ", not an integer type");
        if (c.bound < 0)
            fail(where + ": bound " + std::to_string(c.bound) + " < 0");
    }
    for (size_t c = 0; c < plan.calls.size(); ++c) {
        const PlanCall& call = plan.calls[c];
        const std::string where = "call " + std::to_string(c) + " '" + call.label + "'";
        if (call.kernel < -1 || call.kernel >= static_cast<int32_t>(plan.kernels.size()))
            fail(where + " names kernel " + std::to_string(call.kernel) + ", out of range [-1, " +
                 std::to_string(plan.kernels.size()) + ")");
        for (int32_t a : call.args)
            if (a < 0 || static_cast<size_t>(a) >= plan.tensors.size())
                fail(where + " has argument tensor " + std::to_string(a) + ", out of range [0, " +
                     std::to_string(plan.tensors.size()) + ")");
        if (call.kernel == -1) {
            if (call.args.size() != 2)
                fail(where + " is a copy with " + std::to_string(call.args.size()) +
                     " arguments, expected 2");
            const PlanTensor& src = plan.tensors[static_cast<size_t>(call.args[0])];
            const PlanTensor& dst = plan.tensors[static_cast<size_t>(call.args[1])];
            if (src.bytes != dst.bytes)
                fail(where + " copies " + std::to_string(src.bytes) + " bytes of '" + src.name +
                     "' into '" + dst.name + "' of " + std::to_string(dst.bytes) + " bytes");
            if (dst.storage == TensorStorage::Input || dst.storage == TensorStorage::Weight)
                fail(where + " copies into read-only " + storage_name(dst.storage) + " '" +
                     dst.name + "'");
        }
    }
    validate_cuda_fields(plan);
}

namespace {

/// The CUDA part of validate_plan.
void validate_cuda_fields(const ModelPlan& plan) {
    if (plan.target == PlanTarget::Cpu) {
        if (!plan.cuda_arch.empty() || !plan.cuda_modules.empty() || plan.cubin_bytes != 0)
            fail("a CPU plan carries CUDA fields (arch '" + plan.cuda_arch + "', " +
                 std::to_string(plan.cuda_modules.size()) + " modules, " +
                 std::to_string(plan.cubin_bytes) + " cubin bytes)");
        return;
    }
    if (plan.target != PlanTarget::Cuda)
        fail("plan target " + std::to_string(static_cast<int32_t>(plan.target)) +
             " is unknown (expected 0 cpu or 1 cuda)");
    const std::string& a = plan.cuda_arch;
    if (a.size() < 4 || a.compare(0, 3, "sm_") != 0 ||
        a.find_first_not_of("0123456789", 3) != std::string::npos)
        fail("CUDA plan arch '" + a + "' is not sm_<digits>");
    if (plan.cubin_bytes < 0)
        fail("plan cubin_bytes " + std::to_string(plan.cubin_bytes) + " < 0");
    if (plan.cuda_modules.size() != plan.kernels.size())
        fail("CUDA plan has " + std::to_string(plan.cuda_modules.size()) + " modules for " +
             std::to_string(plan.kernels.size()) + " kernels");
    for (size_t m = 0; m < plan.cuda_modules.size(); ++m) {
        const PlanCudaModule& mod = plan.cuda_modules[m];
        const std::string where =
            "CUDA module " + std::to_string(m) + " ('" + plan.kernels[m] + "')";
        if (mod.cubin_bytes <= 0 || mod.cubin_offset < 0 || mod.cubin_offset > plan.cubin_bytes ||
            mod.cubin_bytes > plan.cubin_bytes - mod.cubin_offset)
            fail(where + " cubin [" + std::to_string(mod.cubin_offset) + ", +" +
                 std::to_string(mod.cubin_bytes) + ") is empty or lies outside the " +
                 std::to_string(plan.cubin_bytes) + " cubin bytes");
        if (mod.launches.empty())
            fail(where + " has no launches");
        for (size_t l = 0; l < mod.launches.size(); ++l) {
            const PlanCudaLaunch& k = mod.launches[l];
            const std::string lw = where + " launch " + std::to_string(l) + " '" + k.symbol + "'";
            if (k.symbol.empty())
                fail(where + " launch " + std::to_string(l) + " has no symbol");
            static constexpr int64_t kMaxGrid[3] = {2147483647, 65535, 65535};
            for (int d = 0; d < 3; ++d) {
                if (k.grid[d] < 1 || k.grid[d] > kMaxGrid[d])
                    fail(lw + " has grid extent " + std::to_string(k.grid[d]) + " in dimension " +
                         std::to_string(d) + ", outside [1, " + std::to_string(kMaxGrid[d]) + "]");
                if (k.block[d] < 1 || k.block[d] > 1024)
                    fail(lw + " has block extent " + std::to_string(k.block[d]) + " in dimension " +
                         std::to_string(d) + ", outside [1, 1024]");
            }
            if (k.block[0] * k.block[1] * k.block[2] > 1024)
                fail(lw + " has " + std::to_string(k.block[0] * k.block[1] * k.block[2]) +
                     " threads per block, more than 1024");
            if (k.shared_bytes < 0)
                fail(lw + " has shared bytes " + std::to_string(k.shared_bytes) + " < 0");
        }
        for (size_t w = 0; w < mod.workspace_bytes.size(); ++w)
            if (mod.workspace_bytes[w] < 0)
                fail(where + " workspace " + std::to_string(w) + " has " +
                     std::to_string(mod.workspace_bytes[w]) + " bytes");
    }
}

} // namespace

std::string serialize_plan(const ModelPlan& plan) {
    Writer w;
    w.bytes(kMagic, sizeof kMagic);
    w.u32(kModelPlanVersion);
    w.str(plan.model_name);
    w.count(plan.tensors.size());
    for (const PlanTensor& t : plan.tensors) {
        w.str(t.name);
        w.i32(static_cast<int32_t>(t.dtype));
        w.count(t.shape.size());
        for (int64_t d : t.shape)
            w.i64(d);
        w.i32(static_cast<int32_t>(t.storage));
        w.i64(t.offset);
        w.i64(t.bytes);
    }
    write_ids(w, plan.inputs);
    write_ids(w, plan.outputs);
    w.count(plan.kernels.size());
    for (const std::string& k : plan.kernels)
        w.str(k);
    w.count(plan.calls.size());
    for (const PlanCall& c : plan.calls) {
        w.i32(c.kernel);
        write_ids(w, c.args);
        w.str(c.label);
        w.i64(c.flops);
        w.str(c.precision);
    }
    w.i64(plan.arena_bytes);
    w.i64(plan.weight_bytes);
    w.i32(static_cast<int32_t>(plan.target));
    w.str(plan.cuda_arch);
    w.count(plan.cuda_modules.size());
    for (const PlanCudaModule& m : plan.cuda_modules) {
        w.i64(m.cubin_offset);
        w.i64(m.cubin_bytes);
        w.count(m.launches.size());
        for (const PlanCudaLaunch& k : m.launches) {
            w.str(k.symbol);
            for (int64_t g : k.grid)
                w.i64(g);
            for (int64_t b : k.block)
                w.i64(b);
            w.i64(k.shared_bytes);
        }
        w.count(m.workspace_bytes.size());
        for (int64_t b : m.workspace_bytes)
            w.i64(b);
    }
    w.i64(plan.cubin_bytes);
    w.i64(static_cast<int64_t>(plan.weights_checksum));
    w.count(plan.index_checks.size());
    for (const PlanIndexCheck& c : plan.index_checks) {
        w.i32(c.input);
        w.i64(c.bound);
        w.str(c.consumer);
    }
    std::string bytes = w.take();
    const uint64_t sum = content_checksum(bytes.data(), bytes.size());
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
    return bytes;
}

ModelPlan parse_plan(const void* data, size_t size) {
    if (!data && size > 0)
        fail("model plan is null");
    Reader r(static_cast<const unsigned char*>(data), size);
    if (size < sizeof kMagic ||
        std::memcmp(static_cast<const unsigned char*>(data), kMagic, sizeof kMagic) != 0)
        fail("not a tessera model plan (the magic \"TSRPLAN\" is missing)");
    char magic[sizeof kMagic];
    r.bytes(magic, sizeof magic, "magic");
    const uint32_t version = r.u32("version");
    if (version != kModelPlanVersion)
        fail("model plan version " + std::to_string(version) +
             " is not supported: this runtime "
             "reads version " +
             std::to_string(kModelPlanVersion) + " (rebuild the model)");
    // The trailing checksum covers every byte before it: a damaged plan fails here, before
    // its fields are trusted.
    const auto* bytes = static_cast<const unsigned char*>(data);
    if (size < sizeof kMagic + 12)
        fail("model plan is truncated: " + std::to_string(size) + " bytes");
    uint64_t stored = 0;
    for (int i = 0; i < 8; ++i)
        stored |= static_cast<uint64_t>(bytes[size - 8 + i]) << (8 * i);
    if (content_checksum(data, size - 8) != stored)
        fail("model plan is corrupt (its checksum does not match its bytes): the library was "
             "damaged after it was built");
    r = Reader(bytes, size - 8);
    r.bytes(magic, sizeof magic, "magic");
    r.u32("version");
    ModelPlan plan;
    plan.model_name = r.str("model name");
    // Minimum encoded sizes: a tensor is 4+4+4+4+8+8 bytes, a call 4+4+4+8+4.
    plan.tensors.resize(r.count("tensors", 32));
    for (PlanTensor& t : plan.tensors) {
        t.name = r.str("tensor name");
        t.dtype = static_cast<PlanDType>(r.i32("tensor dtype"));
        t.shape.resize(r.count("tensor shape", 8));
        for (int64_t& d : t.shape)
            d = r.i64("tensor extent");
        t.storage = static_cast<TensorStorage>(r.i32("tensor storage"));
        t.offset = r.i64("tensor offset");
        t.bytes = r.i64("tensor bytes");
    }
    plan.inputs = read_ids(r, "inputs");
    plan.outputs = read_ids(r, "outputs");
    plan.kernels.resize(r.count("kernels", 4));
    for (std::string& k : plan.kernels)
        k = r.str("kernel name");
    plan.calls.resize(r.count("calls", 24));
    for (PlanCall& c : plan.calls) {
        c.kernel = r.i32("call kernel");
        c.args = read_ids(r, "call args");
        c.label = r.str("call label");
        c.flops = r.i64("call flops");
        c.precision = r.str("call precision");
    }
    plan.arena_bytes = r.i64("arena bytes");
    plan.weight_bytes = r.i64("weight bytes");
    plan.target = static_cast<PlanTarget>(r.i32("target"));
    plan.cuda_arch = r.str("cuda arch");
    // Minimum encoded sizes: a module is 8+8+4+4 bytes, a launch 4+7*8.
    plan.cuda_modules.resize(r.count("cuda modules", 24));
    for (PlanCudaModule& m : plan.cuda_modules) {
        m.cubin_offset = r.i64("cubin offset");
        m.cubin_bytes = r.i64("cubin bytes");
        m.launches.resize(r.count("cuda launches", 60));
        for (PlanCudaLaunch& k : m.launches) {
            k.symbol = r.str("launch symbol");
            for (int64_t& g : k.grid)
                g = r.i64("launch grid");
            for (int64_t& b : k.block)
                b = r.i64("launch block");
            k.shared_bytes = r.i64("launch shared bytes");
        }
        m.workspace_bytes.resize(r.count("workspaces", 8));
        for (int64_t& b : m.workspace_bytes)
            b = r.i64("workspace bytes");
    }
    plan.cubin_bytes = r.i64("cubin bytes");
    plan.weights_checksum = static_cast<uint64_t>(r.i64("weights checksum"));
    // Minimum encoded size of a check: 4+8+4 bytes.
    plan.index_checks.resize(r.count("index checks", 16));
    for (PlanIndexCheck& c : plan.index_checks) {
        c.input = r.i32("index check input");
        c.bound = r.i64("index check bound");
        c.consumer = r.str("index check consumer");
    }
    if (r.pos() != r.size())
        fail("model plan is malformed: " + std::to_string(r.size() - r.pos()) +
             " bytes left after the plan's end at byte " + std::to_string(r.pos()));
    try {
        validate_plan(plan);
    } catch (const std::runtime_error& e) {
        fail(std::string("invalid model plan: ") + e.what());
    }
    return plan;
}

} // namespace tessera::runtime
