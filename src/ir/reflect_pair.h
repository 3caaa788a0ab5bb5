// Private helper of src/ir: walks the fields of two nodes of the same kind side by side through
// their reflect() lists, so equality, hashing and ordering are generic over ir_nodes.def.
#pragma once

#include <type_traits>

namespace tessera::ir::detail {

/// Calls f(name, field_of_a, field_of_b) for each field T::reflect lists, in order. a and b
/// are the same node kind, so their field lists have the same shape.
template <typename T, typename F> void reflect_pair(const T& a, const T& b, F&& f) {
    int index = 0;
    T::reflect(a, [&](const char* name, const auto& fa) {
        using U = std::decay_t<decltype(fa)>;
        const U* fb = nullptr;
        int j = 0;
        T::reflect(b, [&](const char*, const auto& x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, U>) {
                if (j == index) fb = &x;
            }
            ++j;
        });
        ++index;
        f(name, fa, *fb);
    });
}

} // namespace tessera::ir::detail
