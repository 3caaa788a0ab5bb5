// The tessera command end to end: bad input gives one "error:" line and exit 1; good input
// checks and times an operator and ends with a JSON line.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

struct Output {
    int code = -1;
    std::string out; ///< stdout and stderr together
};

Output run_tessera(const std::string& args) {
    std::string cmd = std::string(TESSERA_BINARY) + " " + args + " 2>&1";
    Output o;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return o;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
    int status = pclose(p);
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return o;
}

std::string last_line(const std::string& s) {
    size_t end = s.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    size_t start = s.rfind('\n', end);
    return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

void expect_user_error(const std::string& args, const std::string& fragment) {
    Output o = run_tessera(args);
    EXPECT_EQ(o.code, 1) << args << "\n" << o.out;
    EXPECT_EQ(o.out.rfind("error: ", 0), 0u) << args << "\n" << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << args << "\n" << o.out;
    EXPECT_NE(o.out.find(fragment), std::string::npos) << args << "\n" << o.out;
}

} // namespace

TEST(Cli, BadSpecsAreOneLineErrors) {
    expect_user_error("op run matmull:m=4,n=4,k=4", "matmull");
    expect_user_error("op run matmul:m=4,n=4", "'k'");
    expect_user_error("op run matmul:m=-4,n=4,k=4", "-4");
    expect_user_error("op run matmul:m=4,n=4,k=", "k");
    expect_user_error("op run matmul:m=abc,n=4,k=4", "abc");
    expect_user_error("op run conv2d:n=1,c=3,h=5,w=5,k=2,r=3,s=3,bogus=1", "bogus");
    expect_user_error("op run ''", "");
}

TEST(Cli, BadOptionsAreOneLineErrors) {
    expect_user_error("op run matmul:m=4,n=4,k=4 --repeat 0", "--repeat");
    expect_user_error("op run matmul:m=4,n=4,k=4 --threads -1", "--threads");
    expect_user_error("op run matmul:m=4,n=4,k=4 --no-such-flag", "no-such-flag");
    expect_user_error("frobnicate", "frobnicate");
}

TEST(Cli, HelpOnEverySubcommand) {
    for (const char* sub : {"--help", "hw --help", "op --help", "op run --help", "op list --help"}) {
        Output o = run_tessera(sub);
        EXPECT_EQ(o.code, 0) << sub << "\n" << o.out;
        EXPECT_NE(o.out.find("Usage"), std::string::npos) << sub << "\n" << o.out;
    }
}

TEST(Cli, HwJsonNamesTheMachine) {
    Output o = run_tessera("hw --json");
    ASSERT_EQ(o.code, 0) << o.out;
    auto j = nlohmann::json::parse(last_line(o.out));
    EXPECT_FALSE(j["triple"].get<std::string>().empty());
    EXPECT_FALSE(j["cpu"].get<std::string>().empty());
    EXPECT_GE(j["cores"].get<int>(), 1);
    EXPECT_TRUE(j["features"].is_array());
}

TEST(Cli, OpRunChecksAndTimes) {
    for (const char* spec : {"matmul:m=13,n=7,k=127", "conv2d:n=1,c=3,h=13,w=7,k=5,r=3,s=3,stride=2,pad=1",
                             "softmax:m=7,n=13"}) {
        Output o = run_tessera(std::string("op run ") + spec + " --threads 2 --repeat 3 --json");
        ASSERT_EQ(o.code, 0) << spec << "\n" << o.out;
        auto j = nlohmann::json::parse(last_line(o.out));
        EXPECT_TRUE(j["passed"].get<bool>()) << o.out;
        EXPECT_LT(j["max_rel_err"].get<double>(), 1e-4);
        EXPECT_GT(j["gflops"].get<double>(), 0);
        EXPECT_GT(j["median_ms"].get<double>(), 0);
        EXPECT_EQ(j["checked_elements"].get<int64_t>(), j["total_elements"].get<int64_t>());
    }
}

TEST(Cli, LargeOutputsAreSampled) {
    Output o = run_tessera("op run matmul:m=300,n=300,k=300 --repeat 1 --check-budget 100000 --json");
    ASSERT_EQ(o.code, 0) << o.out;
    auto j = nlohmann::json::parse(last_line(o.out));
    EXPECT_LT(j["checked_elements"].get<int64_t>(), j["total_elements"].get<int64_t>());
    EXPECT_TRUE(j["passed"].get<bool>());
}
