// What a schedule's code needs of a CPU, so that a record measured on one CPU model can serve
// another (the `compatible` lookup tier, lookup.h).
//
// A schedule replays into loops; its vectorized loops are what depends on the CPU. Their width
// (lanes x element bits) is capped at the register width of the machine that recorded the
// schedule: a 64-lane float loop on an AVX2 machine was tuned as eight ymm registers and needs
// AVX there, not AVX-512. From that width and the element types of the vectorized stages
// follow the ISA features the code needs, by one table per architecture:
//
//   x86-64:  width > 256 -> avx512f; > 128 -> avx (float) or avx2 (integer);
//            f16 -> avx512fp16 (or f16c), 8-bit integers -> avx512vnni, bf16 -> avx512bf16,
//            each only when the recording machine had it (else its code did without); a
//            tile_matmul loop nest -> amx-int8 (amx-bf16 when it sums dot2_bf16) and
//            amx-tile, likewise (without them it runs as plain loops).
//   aarch64: width > 128 -> sve; any vector -> neon.
//   others:  nothing (the triple alone decides).
#pragma once

#include <string>
#include <vector>

#include "tessera/schedule/state.h"

namespace tessera::tune {

/// The needs of one schedule's code.
struct CodeNeeds {
    int vector_bits = 0;               ///< Widest vector register its loops use (0: scalar).
    std::vector<std::string> features; ///< LLVM feature names, sorted, unique.
};

/// The triple of an ISA class ("x86_64-pc-linux-gnu;avx,avx2" -> "x86_64-pc-linux-gnu").
std::string isa_class_triple(const std::string& isa_class);
/// The features of an ISA class, sorted as stored.
std::vector<std::string> isa_class_features(const std::string& isa_class);
/// The widest vector register of a machine of that ISA class: 512 with avx512f, 256 with avx,
/// 128 otherwise (aarch64 with sve: 128, since SVE's length is not part of the class).
int isa_class_vector_bits(const std::string& isa_class);

/// The needs of replayed state `s`, recorded on a machine of ISA class `recorded_isa_class`
/// (the record's isa_class). Pure.
CodeNeeds code_needs(const sched::State& s, const std::string& recorded_isa_class);

/// The features of `needs` missing from a machine of ISA class `host_isa_class`, sorted.
std::vector<std::string> missing_features(const CodeNeeds& needs,
                                          const std::string& host_isa_class);

} // namespace tessera::tune
