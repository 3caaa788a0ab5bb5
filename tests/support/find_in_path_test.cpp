// Programs found in PATH as a shell finds them: the first executable file, in PATH's order.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "tessera/support/find_in_path.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

TEST(FindInPath, FirstExecutableInPathOrder) {
    const fs::path dir = fs::temp_directory_path() / ("tessera_path_" + std::to_string(getpid()));
    const fs::path a = dir / "a", b = dir / "b";
    fs::create_directories(a);
    fs::create_directories(b);
    std::ofstream(a / "tool") << "not executable\n";
    std::ofstream(b / "tool") << "#!/bin/sh\n";
    fs::permissions(b / "tool", fs::perms::owner_all);
    std::ofstream(a / "other") << "#!/bin/sh\n";
    fs::permissions(a / "other", fs::perms::owner_all);

    const char* old = std::getenv("PATH");
    const std::string saved = old ? old : "";
    setenv("PATH", (":" + a.string() + ":" + b.string()).c_str(), 1);
    EXPECT_EQ(find_in_path("tool"), (b / "tool").string()); // a's copy cannot be run
    EXPECT_EQ(find_in_path("other"), (a / "other").string());
    EXPECT_EQ(find_in_path("missing"), "");
    setenv("PATH", saved.c_str(), 1);
    fs::remove_all(dir);
}

} // namespace
} // namespace tessera
