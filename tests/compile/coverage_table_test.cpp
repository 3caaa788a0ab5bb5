// The build's coverage report as JSON: a row's note quotes what the tuning database held, which
// a damaged file may leave not UTF-8.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tessera/compile/coverage_table.h"

namespace {

using tessera::compile::ModelBuild;
using tessera::compile::TaskCoverage;

// A record whose schedule is damaged text: the note quoting it shows U+FFFD, and the report is
// still one JSON object (not nlohmann's type_error, which `tessera build --json` turned into an
// internal error, exit 2).
TEST(CoverageJson, ANoteThatIsNotUtf8IsReplacedNotFatal) {
    ModelBuild b;
    b.model_name = "m";
    TaskCoverage row;
    row.pattern = "dense";
    row.record_id = 3;
    row.note = "record #3 does not replay: bad JSON '\xff\xfe{'";
    b.tasks.emplace_back();
    b.tasks.back().coverage = row;
    std::string text;
    ASSERT_NO_THROW(text = tessera::compile::coverage_json(b, nullptr));
    const nlohmann::json j = nlohmann::json::parse(text);
    EXPECT_EQ(j["tasks"][0]["note"].get<std::string>(),
              "record #3 does not replay: bad JSON '\xEF\xBF\xBD\xEF\xBF\xBD{'");
}

} // namespace
