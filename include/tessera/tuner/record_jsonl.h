// Tuning records as JSON Lines: the format `tessera db export` writes and `db import` reads, for
// sharing tuning results between machines and teams (tune_logs/README.md documents it).
//
// One JSON object per line. The first line is the header, then each workload before its records:
//
//   {"format":"tessera-records","version":1,"schema_version":2,"tessera_version":"0.1.0"}
//   {"type":"workload","key":"<64 hex>","compute_text":"tessera-compute v1\ninput t0: ..."}
//   {"type":"record","workload_key":"<64 hex>","target":"llvm -mcpu=znver3",
//    "fingerprint":"<16 hex>","isa_class":"x86_64-pc-linux-gnu;avx,avx2,fma",
//    "schedule_json":"{...}","run_secs":[1.2e-4,...],"median_secs":1.2e-4,"error":"ok",
//    "error_message":"","measure_settings_json":"{...}","tessera_version":"0.1.0",
//    "schema_version":2,"created_at":"2026-11-29T14:00:00Z"}
//
// Workloads travel with their canonical Compute text, so a file is self-contained. The schedule
// and measurement settings are JSON texts inside strings, kept byte for byte, so that a record
// keeps its record_identity() through export and import. Record ids are local to a database and
// are not exported.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "tessera/tuner/database.h"

namespace tessera::tune {

/// The "format" value of the header line and the format version this tessera reads and writes.
constexpr const char* kRecordsFormatName = "tessera-records";
constexpr int kRecordsFormatVersion = 1;

/// Which records export_jsonl writes.
struct JsonlExportOptions {
    /// Only the fastest Ok record per (workload, target, fingerprint); no error records.
    bool best_only = false;
    std::string workload; ///< Only this workload (its full key or a unique prefix); "" = all.
    std::string target;   ///< Only records of exactly this target string; "" = all.
};

struct JsonlExportCounts {
    int64_t workloads = 0; ///< Workload lines written (those with at least one record written).
    int64_t records = 0;   ///< Record lines written.
};

/// Writes the header, then every selected workload (sorted by key) followed by its records (in
/// id order). Throws UserError when options.workload matches no workload or several, and when a
/// workload or record holds text that is not UTF-8 (a damaged file; JSON cannot carry it).
JsonlExportCounts export_jsonl(const TuningDatabase& db, const JsonlExportOptions& options,
                               std::ostream& out);

/// What import_jsonl did. A problem never stops the import: the line is skipped and reported.
struct JsonlImportReport {
    int64_t workloads_added = 0;
    int64_t records_added = 0;
    int64_t duplicates = 0; ///< Records already in the database (same identity), skipped.
    int64_t skipped = 0;    ///< Lines skipped for a problem below.
    /// One line per skipped line: "line N: why" (garbage or half-written JSON, a missing or
    /// mistyped field, an unknown workload, an unknown error name, a record of an unknown
    /// schema version, a workload whose key does not match its text, ...).
    std::vector<std::string> problems;
};

/// Reads a JSONL records file from `in` into `db`: workloads first as they come, then all
/// accepted records in ONE transaction (importing a file twice adds nothing the second time).
/// `source` names the input in messages. Throws UserError (importing nothing) when the first
/// line is not a tessera-records header or names a format version other than
/// kRecordsFormatVersion.
JsonlImportReport import_jsonl(TuningDatabase& db, std::istream& in, const std::string& source);

} // namespace tessera::tune
