// The tuning database: the rules every storage engine shares (record validation, identity,
// merge, argument checks). The storage itself is a DatabaseEngine (database_engine.h): SQLite
// in sqlite_engine.cpp, PostgreSQL in postgres_engine.cpp.
#include "tessera/tuner/database.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "database_engine.h"
#include "tessera/support/error.h"
#include "tessera/support/sha256.h"
#include "tessera/te/workload_key.h"

#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "unknown"
#endif

namespace tessera::tune {

const char* tessera_version() { return TESSERA_VERSION_STRING; }

std::string target_family(const std::string& target) {
    std::string out, word;
    std::istringstream in(target);
    while (in >> word) {
        if (word.rfind("-mcpu=", 0) == 0 || word.rfind("--mcpu=", 0) == 0)
            continue;
        out += (out.empty() ? "" : " ") + word;
    }
    return out;
}

std::string run_secs_to_json(const std::vector<double>& secs) {
    nlohmann::json a = nlohmann::json::array();
    for (double v : secs)
        a.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json());
    return a.dump();
}

std::vector<double> run_secs_from_json(const std::string& json) {
    std::vector<double> out;
    nlohmann::json secs = nlohmann::json::parse(json, nullptr, false);
    if (secs.is_array())
        for (const auto& s : secs)
            out.push_back(s.is_number() ? s.get<double>()
                                        : std::numeric_limits<double>::quiet_NaN());
    return out;
}

std::string record_identity(const TuningRecord& r) {
    // A JSON array keeps the fields apart unambiguously (no separator can occur inside one).
    nlohmann::json fields =
        nlohmann::json::array({r.workload_key, r.target, r.fingerprint, r.schedule_json,
                               r.created_at, run_secs_to_json(r.run_secs)});
    return sha256_hex(fields.dump());
}

double median_secs_of(std::vector<double> secs) {
    TESSERA_CHECK(!secs.empty()) << "the median of no run times";
    std::sort(secs.begin(), secs.end());
    const size_t n = secs.size();
    return n % 2 ? secs[n / 2] : 0.5 * (secs[n / 2 - 1] + secs[n / 2]);
}

std::string prepare_record(TuningRecord& r, size_t i, bool import, const std::string& now) {
    int code = int(r.error_code);
    if (code < int(MeasureError::Ok) || code > int(MeasureError::Unknown))
        throw UserError() << "record " << i << " of the batch has unknown error code " << code
                          << kNothingCommitted;
    if (r.error_code == MeasureError::Ok) {
        if (r.run_secs.empty())
            throw UserError() << "record " << i << " of the batch is ok but has no run time"
                              << kNothingCommitted;
        for (double v : r.run_secs)
            if (!std::isfinite(v) || v < 0)
                throw UserError() << "record " << i << " of the batch has run time " << v
                                  << kNothingCommitted;
        r.median_secs = median_secs_of(r.run_secs);
        if (r.rank_secs == 0)
            r.rank_secs = r.median_secs;
        if (!std::isfinite(r.rank_secs) || r.rank_secs < 0)
            throw UserError() << "record " << i << " of the batch has rank time " << r.rank_secs
                              << kNothingCommitted;
    } else {
        r.median_secs = std::numeric_limits<double>::infinity();
        r.rank_secs = std::numeric_limits<double>::infinity();
    }
    for (const std::string* js : {&r.schedule_json, &r.measure_settings_json})
        if (!nlohmann::json::accept(*js))
            throw UserError() << "record " << i << " of the batch has invalid JSON '" << *js << "'"
                              << kNothingCommitted;
    if (r.tessera_version.empty())
        r.tessera_version = tessera_version();
    if (r.created_at.empty())
        r.created_at = now;
    if (!import || r.schema_version == 0)
        r.schema_version = TuningDatabase::kSchemaVersion;
    if (r.schema_version < 1 || r.schema_version > TuningDatabase::kSchemaVersion)
        throw UserError() << "record " << i << " of the batch has schema version "
                          << r.schema_version << ", this tessera knows 1 to "
                          << TuningDatabase::kSchemaVersion << kNothingCommitted;
    return record_identity(r);
}

std::string migrate_records_2_to_3_sql(const char* real_type) {
    return std::string("ALTER TABLE records ADD COLUMN rank_secs ") + real_type +
           ";"
           "UPDATE records SET rank_secs = median_secs;"
           "DROP INDEX IF EXISTS records_by_workload;"
           "DROP INDEX IF EXISTS records_by_isa_class;"
           "CREATE INDEX records_by_workload"
           "    ON records(workload_id, target, fingerprint, error_code, rank_secs);"
           "CREATE INDEX records_by_isa_class"
           "    ON records(workload_id, isa_class, error_code, rank_secs);";
}

bool is_postgres_url(const std::string& path) {
    return path.rfind("postgresql://", 0) == 0 || path.rfind("postgres://", 0) == 0;
}

bool is_server_database(const std::string& path) { return is_postgres_url(path); }

std::string database_display_name(const std::string& path) {
    if (!is_postgres_url(path))
        return path;
    const size_t start = path.find("://") + 3;
    size_t end = path.find_first_of("/?", start);
    if (end == std::string::npos)
        end = path.size();
    std::string out = path.substr(0, end);
    if (size_t at = out.rfind('@'); at != std::string::npos && at >= start)
        if (size_t colon = out.find(':', start); colon < at)
            out.erase(colon, at - colon);
    const size_t query = path.find('?', end);
    out += path.substr(end, query == std::string::npos ? std::string::npos : query - end);
    if (query != std::string::npos) {
        std::string kept;
        std::istringstream params(path.substr(query + 1));
        for (std::string p; std::getline(params, p, '&');)
            if (p.rfind("password=", 0) != 0)
                kept += (kept.empty() ? "" : "&") + p;
        if (!kept.empty())
            out += "?" + kept;
    }
    return out;
}

std::unique_ptr<DatabaseEngine> make_database_engine(const std::string& path) {
    if (is_postgres_url(path))
        return open_postgres_engine(path);
    return open_sqlite_engine(path);
}

TuningDatabase::TuningDatabase(const std::string& path)
    : path_(path), engine_(make_database_engine(path)) {}

TuningDatabase::~TuningDatabase() = default;
TuningDatabase::TuningDatabase(TuningDatabase&&) noexcept = default;
TuningDatabase& TuningDatabase::operator=(TuningDatabase&&) noexcept = default;

int TuningDatabase::schema_version() const { return engine_->schema_version(); }

std::string TuningDatabase::journal_mode() const { return engine_->journal_mode(); }

std::string TuningDatabase::add_workload(const te::Compute& c) {
    std::string text = te::canonical_compute_text(c);
    std::string key = te::workload_key_of_text(text);
    add_workload(key, text);
    return key;
}

void TuningDatabase::add_workload(const std::string& key, const std::string& text) {
    if (te::workload_key_of_text(text) != key)
        throw UserError() << "workload key '" << key << "' does not match its compute text";
    engine_->add_workload(key, text);
}

bool TuningDatabase::has_workload(const std::string& key) const {
    return compute_text(key).has_value();
}

std::optional<std::string> TuningDatabase::compute_text(const std::string& key) const {
    return engine_->compute_text(key);
}

std::vector<std::string> TuningDatabase::workload_keys() const { return engine_->workload_keys(); }

void TuningDatabase::commit_batch(std::vector<TuningRecord>& records) {
    std::vector<TuningRecord> out = records; // fields are set on `records` only after COMMIT
    engine_->insert_records(out, /*import=*/false);
    records = std::move(out);
}

ImportCounts TuningDatabase::import_records(const std::vector<TuningRecord>& records) {
    std::vector<TuningRecord> out = records;
    return engine_->insert_records(out, /*import=*/true);
}

ImportCounts TuningDatabase::merge_from(const TuningDatabase& other) {
    ImportCounts counts;
    std::vector<TuningRecord> all;
    for (const std::string& key : other.workload_keys()) {
        if (!has_workload(key)) {
            add_workload(key, *other.compute_text(key));
            ++counts.workloads_added;
        }
        for (TuningRecord& r : other.records_of(key))
            all.push_back(std::move(r));
    }
    ImportCounts recs = import_records(all);
    counts.records_added = recs.records_added;
    counts.duplicates = recs.duplicates;
    return counts;
}

int64_t TuningDatabase::prune(int keep_best, bool keep_errors) {
    if (keep_best < 0)
        throw UserError() << "--keep-best must be at least 0, got " << keep_best;
    return engine_->prune(keep_best, keep_errors);
}

std::string TuningDatabase::integrity_check() const { return engine_->integrity_check(); }

std::optional<TuningRecord> TuningDatabase::best_record(const std::string& key,
                                                        const std::string& target,
                                                        const std::string& fingerprint) const {
    return engine_->best_record(key, target, fingerprint);
}

std::optional<TuningRecord> TuningDatabase::best_record_for_isa(const std::string& key,
                                                                const std::string& target,
                                                                const std::string& isa) const {
    // The family is computed here, not in SQL, so engines index (workload, isa_class) only.
    const std::string family = target_family(target);
    for (TuningRecord& r : engine_->ok_records_for_isa(key, isa))
        if (target_family(r.target) == family)
            return std::move(r);
    return std::nullopt;
}

std::vector<TuningRecord> TuningDatabase::top_k(const std::string& key, int k,
                                                const std::string& target,
                                                const std::string& fingerprint) const {
    if (k <= 0)
        return {};
    return engine_->top_k(key, k, target, fingerprint);
}

std::vector<TuningRecord> TuningDatabase::records_of(const std::string& key) const {
    return engine_->records_of(key);
}

bool TuningDatabase::has_measured(const std::string& key, const std::string& schedule_json,
                                  const std::string& target, const std::string& fingerprint) const {
    return engine_->has_measured(key, schedule_json, target, fingerprint);
}

std::set<std::string> TuningDatabase::measured_schedules(const std::string& key,
                                                         const std::string& target,
                                                         const std::string& fingerprint) const {
    return engine_->measured_schedules(key, target, fingerprint);
}

int64_t TuningDatabase::num_records() const { return engine_->num_records(); }

void TuningDatabase::save_cost_model(const std::string& name, const std::vector<uint8_t>& blob) {
    engine_->save_cost_model(name, blob, utc_now());
}

std::optional<std::vector<uint8_t>> TuningDatabase::load_cost_model(const std::string& name) const {
    return engine_->load_cost_model(name);
}

} // namespace tessera::tune
