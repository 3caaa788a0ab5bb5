// What a schedule's code needs of a CPU (code_needs.h).
#include "tessera/tuner/code_needs.h"

#include "tessera/ir/functor.h"

#include <algorithm>

namespace tessera::tune {

namespace {

bool is_x86(const std::string& triple) {
    return triple.rfind("x86_64", 0) == 0 || triple.rfind("i686", 0) == 0;
}
bool is_aarch64(const std::string& triple) {
    return triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0;
}

bool has(const std::vector<std::string>& sorted, const std::string& f) {
    return std::binary_search(sorted.begin(), sorted.end(), f);
}

/// An element type's x86 extension, used by the recording machine's code when it had it.
struct ElementExtension {
    ir::DataType::Code code;
    int bits;
    const char* feature;
};
constexpr ElementExtension kX86ElementExtensions[] = {
    {ir::DataType::Code::Float, 16, "avx512fp16"},
    {ir::DataType::Code::Float, 16, "f16c"},
    {ir::DataType::Code::Int, 8, "avx512vnni"},
    {ir::DataType::Code::UInt, 8, "avx512vnni"},
    {ir::DataType::Code::BFloat, 16, "avx512bf16"},
};

} // namespace

std::string isa_class_triple(const std::string& isa_class) {
    return isa_class.substr(0, isa_class.find(';'));
}

std::vector<std::string> isa_class_features(const std::string& isa_class) {
    std::vector<std::string> out;
    const size_t semi = isa_class.find(';');
    if (semi == std::string::npos)
        return out;
    size_t pos = semi + 1;
    while (pos < isa_class.size()) {
        size_t comma = isa_class.find(',', pos);
        if (comma == std::string::npos)
            comma = isa_class.size();
        if (comma > pos)
            out.push_back(isa_class.substr(pos, comma - pos));
        pos = comma + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
}

int isa_class_vector_bits(const std::string& isa_class) {
    const std::vector<std::string> f = isa_class_features(isa_class);
    if (is_x86(isa_class_triple(isa_class))) {
        if (has(f, "avx512f"))
            return 512;
        if (has(f, "avx"))
            return 256;
    }
    return 128;
}

CodeNeeds code_needs(const sched::State& s, const std::string& recorded_isa_class) {
    const std::string triple = isa_class_triple(recorded_isa_class);
    const std::vector<std::string> recorded = isa_class_features(recorded_isa_class);
    const int register_bits = isa_class_vector_bits(recorded_isa_class);
    CodeNeeds needs;
    std::vector<std::string> features;
    for (size_t sid = 0; sid < s.stages.size(); ++sid) {
        const sched::Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind == sched::ComputeLocKind::Inlined)
            continue;
        int64_t lanes = 1;
        bool tiles = false;
        for (const sched::Iterator& it : st.iters) {
            if (it.annotation == sched::IterAnnotation::Vectorize)
                lanes = std::max(lanes, it.extent);
            tiles = tiles || it.annotation == sched::IterAnnotation::TileMatmul;
        }
        // The stage's product: dot2_bf16 sums bf16 pairs (AMX-BF16), else 8-bit bytes.
        const char* amx =
            ir::contains_call(st.body, ir::CallOp::Dot2BF16) ? "amx-bf16" : "amx-int8";
        if (tiles && is_x86(triple) && has(recorded, amx)) {
            features.push_back(amx);
            features.push_back("amx-tile");
        }
        if (lanes <= 1)
            continue;
        const ir::DataType t = st.tensor.dtype();
        const int bits = int(std::min<int64_t>(lanes * std::max(8, int(t.bits)), register_bits));
        needs.vector_bits = std::max(needs.vector_bits, bits);
        if (is_x86(triple)) {
            if (bits > 256)
                features.push_back("avx512f");
            else if (bits > 128)
                features.push_back(t.is_float() ? "avx" : "avx2");
            // Element types with an extension of their own: the stage's and what it reads.
            std::vector<ir::DataType> types = {t};
            for (int p : s.producers(int(sid)))
                types.push_back(s.stages[size_t(p)].tensor.dtype());
            for (const ir::DataType& e : types)
                for (const ElementExtension& x : kX86ElementExtensions)
                    if (e.code == x.code && e.bits == x.bits && has(recorded, x.feature)) {
                        features.push_back(x.feature);
                        break; // the first the recording machine had: its code used that one
                    }
        } else if (is_aarch64(triple)) {
            features.push_back(bits > 128 ? "sve" : "neon");
        }
    }
    std::sort(features.begin(), features.end());
    features.erase(std::unique(features.begin(), features.end()), features.end());
    needs.features = std::move(features);
    return needs;
}

std::vector<std::string> missing_features(const CodeNeeds& needs,
                                          const std::string& host_isa_class) {
    const std::vector<std::string> host = isa_class_features(host_isa_class);
    std::vector<std::string> missing;
    for (const std::string& f : needs.features)
        if (!has(host, f))
            missing.push_back(f);
    return missing;
}

} // namespace tessera::tune
