// Why a measurement failed: the error class every record stores. Its own header so that the
// measurement worker, which is also built alone for other architectures, needs nothing of the
// database.
#pragma once

#include <optional>
#include <string>

namespace tessera::tune {

/// Why a measurement failed. Stored as its integer value; the values never change meaning.
enum class MeasureError : int {
    Ok = 0,            ///< Measured; run_secs hold the times.
    Instantiation = 1, ///< The schedule did not replay or lower.
    CompileHost = 2,   ///< Code generation failed.
    CompileDevice = 3, ///< Device (GPU) code generation failed.
    RuntimeDevice = 4, ///< The candidate crashed (signal) or failed while running.
    WrongAnswer = 5,   ///< The output differed from the reference.
    BuildTimeout = 6,  ///< Compilation exceeded its time limit.
    RunTimeout = 7,    ///< Running exceeded its time limit (a hang).
    Unknown = 8,       ///< Any other failure.
};
/// "ok", "instantiation", "compile_host", ... (snake case of the enumerator).
const char* to_string(MeasureError e);
/// The MeasureError whose to_string() is `name`, if any.
std::optional<MeasureError> parse_measure_error(const std::string& name);

} // namespace tessera::tune
