// JSONL export and import of tuning records (record_jsonl.h).
#include "tessera/tuner/record_jsonl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"

namespace tessera::tune {

namespace {

using Json = nlohmann::ordered_json;

/// Why one input line is skipped; caught per line, never escapes import_jsonl.
struct LineProblem {
    std::string why;
};

Json record_to_json(const TuningRecord& r) {
    Json j;
    j["type"] = "record";
    j["workload_key"] = r.workload_key;
    j["target"] = r.target;
    j["fingerprint"] = r.fingerprint;
    j["isa_class"] = r.isa_class;
    j["schedule_json"] = r.schedule_json;
    Json secs = Json::array();
    for (double s : r.run_secs)
        secs.push_back(std::isfinite(s) ? Json(s) : Json());
    j["run_secs"] = secs;
    j["median_secs"] = std::isfinite(r.median_secs) ? Json(r.median_secs) : Json();
    j["rank_secs"] = std::isfinite(r.rank_secs) ? Json(r.rank_secs) : Json();
    j["error"] = to_string(r.error_code);
    j["error_message"] = r.error_message;
    j["measure_settings_json"] = r.measure_settings_json;
    j["tessera_version"] = r.tessera_version;
    j["schema_version"] = r.schema_version;
    j["created_at"] = r.created_at;
    return j;
}

const Json& field(const Json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end())
        throw LineProblem{std::string("missing field '") + name + "'"};
    return *it;
}

std::string string_field(const Json& j, const char* name) {
    const Json& v = field(j, name);
    if (!v.is_string())
        throw LineProblem{std::string("field '") + name + "' is not a string"};
    return v.get<std::string>();
}

TuningRecord record_from_json(const Json& j) {
    TuningRecord r;
    const Json& version = field(j, "schema_version");
    if (!version.is_number_integer())
        throw LineProblem{"field 'schema_version' is not an integer"};
    int64_t v = version.get<int64_t>();
    if (v < 1 || v > TuningDatabase::kSchemaVersion)
        throw LineProblem{"record of unknown schema version " + std::to_string(v) +
                          " (this tessera knows 1 to " +
                          std::to_string(TuningDatabase::kSchemaVersion) + ")"};
    r.schema_version = int(v);
    r.workload_key = string_field(j, "workload_key");
    r.target = string_field(j, "target");
    r.fingerprint = string_field(j, "fingerprint");
    r.isa_class = string_field(j, "isa_class");
    r.schedule_json = string_field(j, "schedule_json");
    r.measure_settings_json = string_field(j, "measure_settings_json");
    for (const std::string* js : {&r.schedule_json, &r.measure_settings_json})
        if (!nlohmann::json::accept(*js))
            throw LineProblem{"schedule_json or measure_settings_json is not JSON"};
    const Json& secs = field(j, "run_secs");
    if (!secs.is_array())
        throw LineProblem{"field 'run_secs' is not an array"};
    for (const Json& s : secs) {
        if (!s.is_number() && !s.is_null())
            throw LineProblem{"field 'run_secs' holds a non-number"};
        r.run_secs.push_back(s.is_number() ? s.get<double>()
                                           : std::numeric_limits<double>::quiet_NaN());
    }
    std::string error = string_field(j, "error");
    std::optional<MeasureError> code = parse_measure_error(error);
    if (!code)
        throw LineProblem{"unknown error kind '" + error + "'"};
    r.error_code = *code;
    if (r.error_code == MeasureError::Ok) {
        if (r.run_secs.empty())
            throw LineProblem{"an ok record without run times"};
        for (double s : r.run_secs)
            if (!std::isfinite(s) || s < 0)
                throw LineProblem{"an ok record with run time " + std::to_string(s)};
    }
    r.error_message = string_field(j, "error_message");
    r.tessera_version = string_field(j, "tessera_version");
    r.created_at = string_field(j, "created_at");
    // median_secs is recomputed from run_secs on import; the exported value is for readers.
    // rank_secs travels (it depends on the reference measured beside the record); a file of an
    // older tessera has none, and commit's rule (rank = median) applies.
    if (auto it = j.find("rank_secs");
        r.error_code == MeasureError::Ok && it != j.end() && !it->is_null()) {
        if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0)
            throw LineProblem{"field 'rank_secs' is not a positive number"};
        r.rank_secs = it->get<double>();
    }
    return r;
}

/// The key of the workload `wanted` names: the key itself or a unique prefix of one.
std::string resolve_workload(const std::vector<std::string>& keys, const std::string& wanted) {
    std::vector<std::string> hits;
    for (const std::string& k : keys)
        if (k.rfind(wanted, 0) == 0)
            hits.push_back(k);
    if (hits.empty())
        throw UserError() << "--workload '" << wanted << "' matches no workload of the database";
    if (hits.size() > 1)
        throw UserError() << "--workload '" << wanted << "' matches " << hits.size()
                          << " workloads; give more of the key";
    return hits.front();
}

/// One line of the export. Text that is not UTF-8 (only a damaged file holds any: tessera writes
/// UTF-8) cannot travel in JSON byte for byte, and a replacement character would pass damage on
/// to every database that imports the line: the export stops with a UserError naming the file
/// and `what` instead of nlohmann's type_error.
std::string exported_line(const TuningDatabase& db, const Json& j, const std::string& what) {
    try {
        return j.dump();
    } catch (const nlohmann::json::type_error&) {
        throw UserError() << "tuning database '" << database_display_name(db.path())
                          << "': " << what << " holds text that is not UTF-8 (the file is damaged)";
    }
}

} // namespace

JsonlExportCounts export_jsonl(const TuningDatabase& db, const JsonlExportOptions& options,
                               std::ostream& out) {
    std::vector<std::string> keys = db.workload_keys();
    if (!options.workload.empty())
        keys = {resolve_workload(keys, options.workload)};
    Json header;
    header["format"] = kRecordsFormatName;
    header["version"] = kRecordsFormatVersion;
    header["schema_version"] = TuningDatabase::kSchemaVersion;
    header["tessera_version"] = tessera_version();
    out << header.dump() << "\n";

    JsonlExportCounts counts;
    for (const std::string& key : keys) {
        std::vector<TuningRecord> chosen;
        for (TuningRecord& r : db.records_of(key)) {
            if (!options.target.empty() && r.target != options.target)
                continue;
            if (options.best_only) {
                if (r.error_code != MeasureError::Ok)
                    continue;
                // Keep the fastest per (target, fingerprint); records come in id order, so a
                // tie keeps the earlier one, as best_record does.
                auto same = [&](const TuningRecord& c) {
                    return c.target == r.target && c.fingerprint == r.fingerprint;
                };
                auto it = std::find_if(chosen.begin(), chosen.end(), same);
                if (it == chosen.end())
                    chosen.push_back(std::move(r));
                else if (r.rank_secs < it->rank_secs)
                    *it = std::move(r);
                continue;
            }
            chosen.push_back(std::move(r));
        }
        if (chosen.empty())
            continue;
        Json w;
        w["type"] = "workload";
        w["key"] = key;
        w["compute_text"] = *db.compute_text(key);
        out << exported_line(db, w, "workload " + key.substr(0, 16)) << "\n";
        ++counts.workloads;
        for (const TuningRecord& r : chosen) {
            out << exported_line(db, record_to_json(r), "record " + std::to_string(r.id)) << "\n";
            ++counts.records;
        }
    }
    out.flush();
    if (!out)
        throw UserError() << "writing the export failed (disk full?)";
    return counts;
}

JsonlImportReport import_jsonl(TuningDatabase& db, std::istream& in, const std::string& source) {
    JsonlImportReport report;
    std::string line;
    int64_t line_no = 0;
    // The header: the first line, which must name this format and version.
    if (!std::getline(in, line))
        throw UserError() << "'" << source << "' is empty, not a " << kRecordsFormatName << " file";
    ++line_no;
    Json header = Json::parse(line, nullptr, false);
    if (header.is_discarded() || !header.is_object() || !header.contains("format") ||
        header["format"] != kRecordsFormatName)
        throw UserError() << "'" << source << "' is not a " << kRecordsFormatName
                          << " file (line 1 is not its header)";
    if (!header.contains("version") || header["version"] != kRecordsFormatVersion)
        throw UserError() << "'" << source << "' is " << kRecordsFormatName << " version "
                          << header.value("version", Json()).dump()
                          << "; this tessera reads version " << kRecordsFormatVersion;

    std::vector<TuningRecord> records;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        try {
            Json j = Json::parse(line, nullptr, false);
            if (j.is_discarded() || !j.is_object())
                throw LineProblem{"not a JSON object (garbage or a half-written line)"};
            std::string type = string_field(j, "type");
            if (type == "workload") {
                std::string key = string_field(j, "key");
                std::string text = string_field(j, "compute_text");
                if (te::workload_key_of_text(text) != key)
                    throw LineProblem{"workload key " + key.substr(0, 16) +
                                      " does not match its compute text"};
                if (!db.has_workload(key)) {
                    db.add_workload(key, text);
                    ++report.workloads_added;
                } else if (*db.compute_text(key) != text) {
                    throw LineProblem{"workload " + key.substr(0, 16) +
                                      " is stored with a different compute text"};
                }
            } else if (type == "record") {
                TuningRecord r = record_from_json(j);
                if (!db.has_workload(r.workload_key))
                    throw LineProblem{"record of unknown workload " + r.workload_key.substr(0, 16) +
                                      " (no workload line before it)"};
                records.push_back(std::move(r));
            } else {
                throw LineProblem{"unknown line type '" + type + "'"};
            }
        } catch (const LineProblem& p) {
            ++report.skipped;
            report.problems.push_back("line " + std::to_string(line_no) + ": " + p.why);
        }
    }
    ImportCounts counts = db.import_records(records);
    report.records_added = counts.records_added;
    report.duplicates = counts.duplicates;
    return report;
}

} // namespace tessera::tune
