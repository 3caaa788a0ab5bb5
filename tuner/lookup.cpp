// The lookup policy: exact fingerprint, then ISA class, then none (lookup.h).
#include "tessera/tuner/lookup.h"

namespace tessera::tune {

const char* to_string(LookupTier t) {
    switch (t) {
    case LookupTier::Exact:
        return "exact";
    case LookupTier::IsaClass:
        return "isa_class";
    case LookupTier::None:
        return "none";
    }
    return "?";
}

LookupResult lookup_best(const TuningDatabase& db, const std::string& workload_key,
                         const LookupKey& key) {
    LookupResult r;
    if (!db.has_workload(workload_key))
        return r;
    if ((r.record = db.best_record(workload_key, key.target, key.fingerprint))) {
        r.tier = LookupTier::Exact;
    } else if ((r.record = db.best_record_for_isa(workload_key, key.target, key.isa_class))) {
        r.tier = LookupTier::IsaClass;
    }
    // Foreign = usable by neither tier: another ISA class, or another target family (an
    // exact-tier record has this very target, so it is of this family too).
    const std::string family = target_family(key.target);
    for (const TuningRecord& rec : db.records_of(workload_key)) {
        if (rec.error_code != MeasureError::Ok)
            continue;
        if (rec.isa_class != key.isa_class || target_family(rec.target) != family)
            ++r.foreign_records;
    }
    return r;
}

} // namespace tessera::tune
