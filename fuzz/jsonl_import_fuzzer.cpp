// Fuzz target of the JSON Lines import of tuning records (tuner/record_jsonl.h), which reads the
// files teams share between machines (`tessera db import`): any byte string must import (each
// line added, skipped as a duplicate or skipped with a reported problem) or be refused as a
// whole with a UserError, never crash, and never leave the database inconsistent: every
// record it holds afterwards belongs to a workload it holds, and the database passes its
// integrity check.
//
// One in-memory database for the whole run: records accumulate as they would in a team's
// database. Seeds: exports of small tuning databases (fuzz_seeds). Driver: libFuzzer or
// standalone_driver.cpp (CMakeLists.txt, scripts/fuzz_all.sh).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "tessera/support/error.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/record_jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tessera;
    static tune::TuningDatabase db(":memory:");
    static int64_t inputs = 0;
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    const int64_t before = db.num_records();
    try {
        const tune::JsonlImportReport r = tune::import_jsonl(db, in, "fuzz-input.jsonl");
        TESSERA_CHECK(db.num_records() == before + r.records_added)
            << "the import reports " << r.records_added << " records added, the database grew by "
            << db.num_records() - before;
    } catch (const UserError&) {
        TESSERA_CHECK(db.num_records() == before) << "a refused import added records";
    }
    // The integrity check reads every page: often enough to catch damage, not every input.
    if (++inputs % 256 == 0) {
        for (const std::string& key : db.workload_keys())
            TESSERA_CHECK(db.compute_text(key).has_value()) << "workload " << key << " lost";
        const std::string integrity = db.integrity_check();
        TESSERA_CHECK(integrity == "ok") << "integrity check: " << integrity;
    }
    return 0;
}
