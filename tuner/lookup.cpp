// The lookup policy: exact fingerprint, then ISA class, then a compatible CPU, then none
// (lookup.h).
#include "tessera/tuner/lookup.h"

#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"

namespace tessera::tune {

namespace {

/// Shared features over all features of two ISA classes (1 when both have none).
double isa_similarity(const std::string& a, const std::string& b) {
    const std::vector<std::string> fa = isa_class_features(a), fb = isa_class_features(b);
    std::vector<std::string> both, either;
    std::set_intersection(fa.begin(), fa.end(), fb.begin(), fb.end(), std::back_inserter(both));
    std::set_union(fa.begin(), fa.end(), fb.begin(), fb.end(), std::back_inserter(either));
    return either.empty() ? 1.0 : double(both.size()) / double(either.size());
}

bool faster(const TuningRecord& a, const TuningRecord& b) {
    return a.rank_secs != b.rank_secs ? a.rank_secs < b.rank_secs : a.id < b.id;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? sep : "") + v[i];
    return s;
}

/// Fills m.best_usable or m.refusal from the machine's records (fastest first).
void judge(OtherMachine& m, const std::vector<TuningRecord>& records, const TuneTarget& key,
           const NeedsOf& needs_of) {
    const TuningRecord& any = records.front();
    if (isa_class_triple(m.isa_class) != isa_class_triple(key.isa_class)) {
        m.refusal = "another architecture (" + isa_class_triple(m.isa_class) + ")";
        return;
    }
    if (target_family(any.target) != target_family(key.target)) {
        m.refusal = "target " + target_family(any.target);
        return;
    }
    if (m.isa_class == key.isa_class) { // the same code: no check needed
        m.best_usable = any;
        return;
    }
    if (!needs_of) {
        m.refusal = "not checked";
        return;
    }
    std::vector<std::string> missing;
    int replayed = 0;
    for (size_t i = 0; i < records.size() && i < size_t(kMachineRecordsChecked); ++i) {
        const std::optional<CodeNeeds> needs = needs_of(records[i]);
        if (!needs)
            continue;
        ++replayed;
        const std::vector<std::string> miss = missing_features(*needs, key.isa_class);
        if (miss.empty()) {
            m.best_usable = records[i];
            return;
        }
        missing.insert(missing.end(), miss.begin(), miss.end());
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (replayed == 0)
        m.refusal = "they do not replay on this workload";
    else
        m.refusal =
            fmt::format("{} {}, absent here", records.size() == 1 ? "it needs" : "they need",
                        join(missing, ", "));
}

} // namespace

const char* to_string(LookupTier t) {
    switch (t) {
    case LookupTier::Exact:
        return "exact";
    case LookupTier::IsaClass:
        return "isa_class";
    case LookupTier::Compatible:
        return "compatible";
    case LookupTier::Default:
        return "default";
    }
    return "?";
}

NeedsOf needs_by_replay(const te::Compute& c) {
    // Shared so that copies of the function share one cache (records are looked up repeatedly).
    auto cache = std::make_shared<std::map<std::string, std::optional<CodeNeeds>>>();
    return [c, cache](const TuningRecord& r) -> std::optional<CodeNeeds> {
        const std::string key = r.isa_class + "\n" + r.schedule_json;
        auto it = cache->find(key);
        if (it != cache->end())
            return it->second;
        std::optional<CodeNeeds> needs;
        try {
            needs =
                code_needs(sched::replay(c, sched::steps_from_json(r.schedule_json)), r.isa_class);
        } catch (const ScheduleError&) {
        } catch (const UserError&) {
            // A schedule of another format version: it does not replay here.
        }
        return cache->emplace(key, needs).first->second;
    };
}

std::string recording_cpu(const TuningRecord& r) {
    const size_t at = r.target.find("-mcpu=");
    if (at != std::string::npos) {
        const size_t start = at + 6;
        return r.target.substr(start, r.target.find(' ', start) - start);
    }
    return "fp " + r.fingerprint.substr(0, 8);
}

namespace {

/// other_machines over the workload's records, read once by the caller.
std::vector<OtherMachine> machines_of(const std::vector<TuningRecord>& all, const TuneTarget& key,
                                      const NeedsOf& needs_of) {
    // Grouped by (fingerprint, target family): one machine may hold records of several targets.
    std::map<std::pair<std::string, std::string>, std::vector<TuningRecord>> groups;
    for (const TuningRecord& r : all) {
        if (r.error_code != MeasureError::Ok)
            continue;
        if (r.fingerprint == key.fingerprint && r.target == key.target)
            continue; // this machine's own: the exact tier
        groups[{r.fingerprint, target_family(r.target)}].push_back(r);
    }
    std::vector<OtherMachine> out;
    for (auto& [id, records] : groups) {
        std::sort(records.begin(), records.end(), faster);
        OtherMachine m;
        m.cpu = recording_cpu(records.front());
        m.fingerprint = id.first;
        m.isa_class = records.front().isa_class;
        m.ok_records = int64_t(records.size());
        m.similarity = isa_similarity(m.isa_class, key.isa_class);
        judge(m, records, key, needs_of);
        out.push_back(std::move(m));
    }
    std::stable_sort(out.begin(), out.end(), [](const OtherMachine& a, const OtherMachine& b) {
        if (a.similarity != b.similarity)
            return a.similarity > b.similarity;
        if (bool(a.best_usable) != bool(b.best_usable))
            return bool(a.best_usable);
        if (a.best_usable && b.best_usable && a.best_usable->rank_secs != b.best_usable->rank_secs)
            return a.best_usable->rank_secs < b.best_usable->rank_secs;
        return a.fingerprint < b.fingerprint;
    });
    return out;
}

} // namespace

std::vector<OtherMachine> other_machines(const TuningDatabase& db, const std::string& workload_key,
                                         const TuneTarget& key, const NeedsOf& needs_of) {
    return machines_of(db.records_of(workload_key), key, needs_of);
}

LookupResult lookup_best(const TuningDatabase& db, const std::string& workload_key,
                         const TuneTarget& key, const NeedsOf& needs_of) {
    LookupResult r;
    if (!db.has_workload(workload_key))
        return r;
    if ((r.record = db.best_record(workload_key, key.target, key.fingerprint))) {
        r.tier = LookupTier::Exact;
    } else if ((r.record = db.best_record_for_isa(workload_key, key.target, key.isa_class))) {
        r.tier = LookupTier::IsaClass;
    }
    // Foreign = usable by neither of the first two tiers: another ISA class, or another target
    // family (an exact-tier record has this very target, so it is of this family too).
    const std::string family = target_family(key.target);
    const std::vector<TuningRecord> records = db.records_of(workload_key);
    for (const TuningRecord& rec : records) {
        if (rec.error_code != MeasureError::Ok)
            continue;
        if (rec.isa_class != key.isa_class || target_family(rec.target) != family)
            ++r.foreign_records;
    }
    if (r.tier == LookupTier::Default && r.foreign_records > 0) {
        std::vector<std::string> why;
        for (const OtherMachine& m : machines_of(records, key, needs_of)) {
            if (m.best_usable && !r.record) {
                r.tier = LookupTier::Compatible;
                r.record = m.best_usable;
            }
            if (!m.best_usable)
                why.push_back(fmt::format("{} record{} from {}: {}", m.ok_records,
                                          m.ok_records == 1 ? "" : "s", m.cpu, m.refusal));
        }
        if (!r.record)
            r.why_none = join(why, "; ");
    }
    if (r.record)
        r.record_cpu = recording_cpu(*r.record);
    return r;
}

std::vector<TuningRecord> transfer_seeds(const TuningDatabase& db, const std::string& workload_key,
                                         const TuneTarget& key, const NeedsOf& needs_of, int max) {
    std::vector<TuningRecord> seeds;
    if (max <= 0 || !db.has_workload(workload_key))
        return seeds;
    for (OtherMachine& m : other_machines(db, workload_key, key, needs_of)) {
        if (int(seeds.size()) >= max)
            break;
        if (m.best_usable && m.fingerprint != key.fingerprint)
            seeds.push_back(std::move(*m.best_usable));
    }
    return seeds;
}

} // namespace tessera::tune
