// Alpha-equivalent structural equality and hashing of the loop IR and tensor expressions.
//
// Two IRs are structurally equal when they have the same node kinds, types and fields, up to a
// consistent renaming of variables, buffers and tensors: objects of the two sides are paired
// by a bijection made on first encounter, in traversal order (fields in reflect() order). So
// `x + y` equals `a + b` for fresh a, b, but not `a + a`; names never matter. Buffers also
// compare dtype and shape; tensors compare dtype, shape and, recursively, their definitions
// (axes and body; placeholders by dtype and shape only).
//
// The walk is generic over ir_nodes.def and each node's reflect() list, so a new node or field
// is compared and hashed without touching this code.
//
// The hash is a deterministic 64-bit value (tessera::hash_combine) that is the same on every
// platform and run: objects hash by their first-occurrence index, never by address, so
// structurally equal IRs hash equal. It is stable within a tessera version (it mixes in node
// kind names and enum values), not a persistent format.
//
// A variable reused in two sibling binding sites (`for i` twice) pairs with one object only;
// IR that verify() accepts binds each variable once, so this never matters there.
#pragma once

#include <cstdint>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

/// True when a and b are equal up to renaming (see above). Undefined equals undefined only.
bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
/// Also compares the function names (they are the symbol) and pairs params in order.
bool structural_equal(const LoweredFunc& a, const LoweredFunc& b);
/// Compares two tensor-expression DAGs (the tensors and, recursively, what they read).
bool structural_equal(const Tensor& a, const Tensor& b);

/// Hashes consistent with structural_equal: equal IRs have equal hashes.
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const LoweredFunc& f);
uint64_t structural_hash(const Tensor& t);

} // namespace tessera::ir
