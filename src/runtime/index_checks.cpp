// The index checks of a run's inputs (check_index_inputs in model_plan.h).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tessera/runtime/model_plan.h"

namespace tessera::runtime {

namespace {

/// "[i, j, k]" of flat element `flat` in `shape` (row-major).
std::string multi_index(int64_t flat, const std::vector<int64_t>& shape) {
    std::vector<int64_t> idx(shape.size(), 0);
    for (size_t d = shape.size(); d-- > 0;) {
        const int64_t extent = shape[d] > 0 ? shape[d] : 1;
        idx[d] = flat % extent;
        flat /= extent;
    }
    std::string s = "[";
    for (size_t d = 0; d < idx.size(); ++d)
        s += (d ? ", " : "") + std::to_string(idx[d]);
    return s + "]";
}

/// The position of the first element outside [-bound, bound), or -1.
template <typename T> int64_t first_outside(const void* data, int64_t n, int64_t bound) {
    const T* v = static_cast<const T*>(data);
    for (int64_t i = 0; i < n; ++i) {
        // Unsigned values are never negative; compare in the widest type that holds both.
        if constexpr (std::is_unsigned_v<T>) {
            if (static_cast<uint64_t>(v[i]) >= static_cast<uint64_t>(bound))
                return i;
        } else {
            const int64_t x = static_cast<int64_t>(v[i]);
            if (x < -bound || x >= bound)
                return i;
        }
    }
    return -1;
}

/// f(T{}) for the C++ type T of integer dtype t (I64 for any other: validate_plan admits
/// integer types only).
template <typename F> auto with_integer_type(PlanDType t, F&& f) {
    switch (t) {
    case PlanDType::I8:
        return f(int8_t{});
    case PlanDType::U8:
        return f(uint8_t{});
    case PlanDType::I16:
        return f(int16_t{});
    case PlanDType::U16:
        return f(uint16_t{});
    case PlanDType::I32:
        return f(int32_t{});
    case PlanDType::U32:
        return f(uint32_t{});
    case PlanDType::U64:
        return f(uint64_t{});
    default:
        return f(int64_t{});
    }
}

} // namespace

void check_index_inputs(const ModelPlan& plan, const void* const* inputs) {
    for (const PlanIndexCheck& c : plan.index_checks) {
        const PlanTensor& t =
            plan.tensors[static_cast<size_t>(plan.inputs[static_cast<size_t>(c.input)])];
        const void* data = inputs[c.input];
        if (!data)
            continue; // the executor names a null buffer
        int64_t n = 1;
        for (int64_t d : t.shape)
            n *= d;
        const int64_t bad = with_integer_type(
            t.dtype, [&](auto zero) { return first_outside<decltype(zero)>(data, n, c.bound); });
        if (bad >= 0)
            throw std::runtime_error(
                "input '" + t.name + "' element " + multi_index(bad, t.shape) + " is " +
                with_integer_type(t.dtype,
                                  [&](auto zero) {
                                      return std::to_string(
                                          static_cast<const decltype(zero)*>(data)[bad]);
                                  }) +
                ", outside [" + std::to_string(-c.bound) + ", " + std::to_string(c.bound) +
                ") of " + c.consumer);
    }
}

} // namespace tessera::runtime
