// The record lookup policy of `build`, `op run --db` and tune's transfer seeds (DESIGN.md
// decision 2). For a workload, in this order:
//   exact       the best record measured for this target on this very machine (fingerprint);
//   isa_class   the best measured for this target family on another machine of this ISA class;
//   compatible  the best record of another CPU model of this triple and target family whose
//               code needs only what this CPU has (code_needs.h: its vector width and the ISA
//               extensions its code uses), taken from the machine whose ISA is most like this
//               one's (shared features over all features), then the fastest;
//   none        the caller uses its default schedule.
// Never silent: the result names the CPU that recorded what served, counts the records passed
// over ("foreign"), and when nothing served says why in words, per other machine:
// "12 records from rocketlake: they need avx512f, absent here".
//
// "Same target" means two different things per tier. The exact tier compares the whole target
// string ("llvm -mcpu=skylake-avx512"). The other tiers compare target_family() (the target
// without -mcpu, e.g. "llvm"): the CPU name in -mcpu differs between two machines of one kind,
// yet their schedules generate the same code, so comparing -mcpu would make those tiers dead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessera/te/compute.h"
#include "tessera/tuner/code_needs.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/tune_target.h"

namespace tessera::tune {

/// Which lookup tier served a workload.
enum class LookupTier : uint8_t {
    Exact,      ///< Measured for this target on a machine with this fingerprint.
    IsaClass,   ///< Measured for this target family on another machine of this ISA class.
    Compatible, ///< Measured on another CPU model whose code runs here (see the file comment).
    Default,    ///< No usable record: the caller runs its default schedule.
};

/// "exact", "isa_class", "compatible", "default".
const char* to_string(LookupTier t);

/// The code needs of a record's schedule replayed on the workload's compute; nullopt when the
/// schedule does not replay there.
using NeedsOf = std::function<std::optional<CodeNeeds>(const TuningRecord&)>;

/// A NeedsOf that replays records on `c` (code_needs of the replayed state with the record's
/// ISA class). Keeps a copy of c.
NeedsOf needs_by_replay(const te::Compute& c);

/// The CPU that recorded `r`: the -mcpu of its target, else the first 8 digits of its
/// fingerprint (e.g. "rocketlake", "fp 3fa2c1d0").
std::string recording_cpu(const TuningRecord& r);

/// What the Ok records of one other machine (fingerprint) offer this one.
struct OtherMachine {
    std::string cpu;         ///< recording_cpu() of its records.
    std::string fingerprint;
    std::string isa_class;
    int64_t ok_records = 0;
    /// Shared ISA features over all ISA features of the two machines (1: the same class).
    double similarity = 0;
    /// Its fastest record whose code needs only what this machine has (among the fastest
    /// kMachineRecordsChecked), if any.
    std::optional<TuningRecord> best_usable;
    /// Why none is usable, e.g. "they need avx512f, absent here", "another architecture
    /// (aarch64-unknown-linux-gnu)", "target cuda", "they do not replay on this workload".
    std::string refusal;
};

/// How many of a machine's fastest records other_machines checks for a usable one.
constexpr int kMachineRecordsChecked = 8;

/// Every machine other than key's own (by fingerprint, its records of any target) with Ok
/// records of the workload: most similar first, then the faster best usable record, then
/// fingerprint. Without needs_of, records of another ISA class are not checked (refusal "not
/// checked"); records of this ISA class and target family are usable without a check.
std::vector<OtherMachine> other_machines(const TuningDatabase& db, const std::string& workload_key,
                                         const TuneTarget& key, const NeedsOf& needs_of);

struct LookupResult {
    LookupTier tier = LookupTier::Default;
    std::optional<TuningRecord> record; ///< Set unless tier is Default.
    /// recording_cpu() of the record served (empty for tier Default).
    std::string record_cpu;
    /// Ok records of the workload that neither the exact nor the ISA-class tier may use:
    /// measured for another target family, or on a machine of another ISA class.
    int64_t foreign_records = 0;
    /// Tier None with foreign records: why none served, one clause per other machine joined by
    /// "; ", e.g. "12 records from rocketlake: they need avx512f, absent here".
    std::string why_none;
};

/// Looks up the best record of `workload_key` for `key` (exact, ISA class, compatible).
/// needs_of decides the compatible tier (without it that tier is skipped). Deterministic (ties
/// by record id). An unknown workload gives tier Default.
LookupResult lookup_best(const TuningDatabase& db, const std::string& workload_key,
                         const TuneTarget& key, const NeedsOf& needs_of = {});

/// Transfer seeds for tuning on key's machine: the best usable record of up to `max` other
/// machines (other_machines' order), each machine once.
std::vector<TuningRecord> transfer_seeds(const TuningDatabase& db, const std::string& workload_key,
                                         const TuneTarget& key, const NeedsOf& needs_of, int max);

} // namespace tessera::tune
