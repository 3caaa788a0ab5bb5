// Helpers shared by the reference evaluator's kernels.
#include "eval_util.h"

#include <type_traits>

#include "../op_util.h"

namespace tessera::graph::detail {

const TensorData& require_input(const EvalInputs& in, size_t i, const std::string& where) {
    if (i >= in.size() || in[i] == nullptr)
        throw UserError() << where << ": input " << i << " is missing";
    return *in[i];
}

void require_dtype(const TensorData& t, std::initializer_list<DType> allowed, const char* what,
                   const std::string& where) {
    for (DType d : allowed)
        if (t.dtype() == d)
            return;
    std::string names;
    for (DType d : allowed)
        names += std::string(names.empty() ? "" : " or ") + dtype_name(d);
    throw UserError() << where << ": " << what << " is " << dtype_name(t.dtype()) << ", expected "
                      << names;
}

void require_f32(const TensorData& t, const char* what, const std::string& where) {
    require_dtype(t, {DType::F32}, what, where);
}

void require_rank(const TensorData& t, int64_t rank, const char* what, const std::string& where) {
    if (t.rank() != rank)
        throw UserError() << where << ": " << what << " must have rank " << rank << ", got shape "
                          << shape_str(t.shape());
}

std::vector<int64_t> int_elements(const TensorData& t, const char* what, const std::string& where) {
    require_dtype(t, {DType::I64, DType::I32}, what, where);
    if (t.rank() > 1)
        throw UserError() << where << ": " << what << " must be 1-D, got shape "
                          << shape_str(t.shape());
    return t.as_i64();
}

void gather_elements(const TensorData& src, TensorData& dst, const std::vector<int64_t>& strides,
                     int64_t base) {
    TESSERA_CHECK(src.dtype() == dst.dtype()) << "gather_elements dtype mismatch";
    visit_dtype(src.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* ps = src.data<T>();
        T* pd = dst.data<T>();
        for_each_index<1>(
            dst.shape(), {strides}, {base},
            [&](int64_t o, const std::array<int64_t, 1>& off) { pd[o] = ps[off[0]]; });
        return 0;
    });
}

} // namespace tessera::graph::detail
