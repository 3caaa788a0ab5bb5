// The reference evaluator of the loop IR: runs a LoweredFunc on host memory, slowly but exactly.
//
// The interpreter defines what the IR means for the tests: backends and passes are checked
// against it. It is strict where hardware would be silent: an out-of-bounds Load or Store, an
// integer division by zero, a free variable or a buffer used outside its Allocate are
// InternalErrors naming the culprit.
#pragma once

#include <memory>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

/// Runs `f` once. args[i] points to the data of f.params[i], holding num_elements elements of the
/// param's dtype: float for f32, double for f64, int32_t for i32, int64_t for i64, uint8_t for
/// bool (0 or 1) and u8, other widths as the matching <cstdint> type, f16 as IEEE half bits.
///
/// Semantics (see ir/expr.h): integer arithmetic wraps in the type's width; integer Div/Mod
/// floor; float Mod is a - b * floor(a / b); f32 and f16 results are rounded to the type after
/// every operation; float Min/Max follow fmin/fmax (a NaN operand loses); Cast float -> int
/// truncates toward zero (NaN gives 0, out-of-range values saturate before wrapping); Cast to bool
/// is `!= 0`. Select evaluates both branches. Parallel, Vectorized and Unrolled loops run
/// serially in order. Call(Prefetch) is a no-op that yields 0 and does not evaluate its Load.
/// Allocate gives memory filled with 0xFF bytes (NaN for floats, -1 for ints) so reading
/// before writing shows up. A vector Store writes lanes in order (the last duplicate index
/// wins).
///
/// Throws InternalError on malformed IR (free variable, unknown buffer, TensorRead/Reduce left,
/// wrong argument count or a null argument) and on run-time faults (out-of-bounds access, integer
/// division by zero).
void interpret(const LoweredFunc& f, const std::vector<void*>& args);

/// An interpreter that translates `f` once and can run it many times (cheaper than calling
/// interpret repeatedly). Not thread-safe: one run at a time per object.
class Interpreter {
  public:
    /// Translates f; throws InternalError on malformed IR.
    explicit Interpreter(const LoweredFunc& f);
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    /// Runs the function on args (as for interpret()).
    void run(const std::vector<void*>& args);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace tessera::ir
