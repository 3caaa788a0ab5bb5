// Output files written all or nothing, and never over a node that is not a regular file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tessera/support/error.h"
#include "tessera/support/replace_file.h"

#include <unistd.h>

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(ReplaceFile, WritesWholeFilesAndLeavesNothingHalfWritten) {
    const fs::path dir =
        fs::temp_directory_path() / ("tessera_replace_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string out = (dir / "out.txt").string();
    replace_file(out, [](std::ostream& f) { f << "first"; });
    EXPECT_EQ(read(out), "first");
    replace_file(out, [](std::ostream& f) { f << "second, longer"; });
    EXPECT_EQ(read(out), "second, longer");
    // A writer that fails half way: the old content stays, no partial file remains.
    EXPECT_THROW(replace_file(out,
                              [](std::ostream& f) {
                                  f << "half";
                                  throw std::runtime_error("interrupted");
                              }),
                 std::runtime_error);
    EXPECT_EQ(read(out), "second, longer");
    EXPECT_FALSE(fs::exists(out + ".partial"));
    // A folder and a device are refused by name; the device stays a device.
    try {
        replace_file(dir.string(), [](std::ostream& f) { f << "x"; });
        ADD_FAILURE() << "a folder was replaced";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
    }
    try {
        check_replaceable("/dev/null");
        ADD_FAILURE() << "/dev/null accepted";
    } catch (const UserError& e) {
        EXPECT_EQ(std::string(e.what()), "cannot write '/dev/null': it is not a regular file");
    }
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
    EXPECT_NO_THROW(check_replaceable((dir / "new.txt").string()));
    fs::remove_all(dir);
}

} // namespace
} // namespace tessera
