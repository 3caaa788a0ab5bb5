// The record lookup policy of `build` and `op run --db` (DESIGN.md decision 2): for a workload,
// the best record measured on this exact machine, else the best measured for the same target
// on another machine of the same ISA class, else none (the caller uses its default schedule).
// Never silent: the result says which tier served and how many records were passed over
// because they belong to other machines or targets ("foreign").
//
// "Same target" means two different things per tier. The exact tier compares the whole target
// string ("llvm -mcpu=skylake-avx512"). The ISA-class tier compares target_family() (the target
// without -mcpu, e.g. "llvm") and the ISA class: the CPU name in -mcpu differs between two
// machines of one kind (a "skylake-avx512" and a "cascadelake" with the same vector ISA), yet
// their schedules generate the same code, so comparing -mcpu would make this tier dead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/tuner/database.h"

namespace tessera::tune {

/// Which lookup tier served a workload.
enum class LookupTier : uint8_t {
    Exact,    ///< Measured for this target on a machine with this fingerprint.
    IsaClass, ///< Measured for this target family on another machine of this ISA class.
    None,     ///< No usable record: the caller falls back to its default schedule.
};

/// "exact", "isa_class", "none".
const char* to_string(LookupTier t);

/// The machine and target a lookup is for (TuneTarget's fields).
struct LookupKey {
    std::string target;      ///< e.g. "llvm -mcpu=rocketlake"
    std::string fingerprint; ///< HardwareFingerprint::hash()
    std::string isa_class;   ///< HardwareFingerprint::isa_class()
};

struct LookupResult {
    LookupTier tier = LookupTier::None;
    std::optional<TuningRecord> record; ///< Set unless tier is None.
    /// Ok records of the workload that no tier may use: measured for another target family, or
    /// on a machine of another ISA class.
    int64_t foreign_records = 0;
};

/// Looks up the best record of `workload_key` for `key` (exact fingerprint, then ISA class).
/// Deterministic (ties by record id). An unknown workload gives tier None.
LookupResult lookup_best(const TuningDatabase& db, const std::string& workload_key,
                         const LookupKey& key);

} // namespace tessera::tune
