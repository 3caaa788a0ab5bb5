// Fault injection into tuning databases: a read-only database (on a read-only bind mount, since
// root ignores file permissions), one from a newer schema, corrupt ones (random bytes over the
// header, over the pages and inside the records' text, truncations at seeded lengths), an empty
// file and a directory, each given to `db list`, `db stats`, `db verify`, `db export`,
// `build MODEL --db`, `tune MODEL --db` and `op run --db`. Reading works where it can; anything
// else is exit 1 with one `error:` line naming the file; never exit 2 or a crash.
// tests/cli/db_cli_test.cpp checks single instances through `db` alone; here it is every command
// over many damaged files, with the figures of the fault suite.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <sys/mount.h>
#include <unistd.h>

#include "common/model_library_loader.h"
#include "common/tessera_process.h"
#include "faults/fault_util.h"
#include "tessera/te/op_registry.h"
#include "tessera/tuner/database.h"

namespace {

namespace fs = std::filesystem;
using tessera::testing::fault_scale;
using tessera::testing::print_figure;
using tessera::testing::ProcessOutput;

constexpr const char* kSpec = "matmul:m=13,n=7,k=127";
/// The simulated runner with a tiny search (as tests/cli/tune_model_test.cpp): 8 candidates.
constexpr const char* kQuickTune = " --runner simulated --model random --population 24 "
                                   "--generations 1 --measure-per-round 8 --trials 8";

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// What a command must do with a database.
enum class Want {
    Read,   ///< exit 0
    Refuse, ///< exit 1, one `error:` line naming the file
    Either, ///< one of the two (damage a command may never touch)
};

/// One of the commands, "{db}" standing for the database's path and "{out}" for a scratch
/// path of its own.
struct Command {
    std::string name;
    std::string args;
};

/// A database fault: the file each command gets (a fresh copy per command unless `shared`) and
/// what each command must do with it.
struct DbCase {
    std::string label;
    std::string path;       ///< The damaged file (or directory).
    bool shared = false;    ///< Every command gets `path` itself (a directory, a read-only mount).
    std::vector<Want> want; ///< Per command, in commands() order.
    std::string says;       ///< In every refusal ("" for no particular text).
};

class DatabaseFaults : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = std::make_unique<tessera::testing::ScratchDir>("tessera_database_faults");
        model_ = tessera::testing::shared_models_dir() + "/mlp/model.onnx";
        if (!fs::exists(model_))
            return;
        // A real database: local tunes of the model's tasks and of kSpec (records of this
        // machine that `build --db` and `op run --db` take and that `db verify` replays), then a
        // few hundred more records so that it spans many pages.
        good_ = dir_->file("good.db");
        for (const std::string& what : {model_, std::string("--op ") + kSpec}) {
            const ProcessOutput o = tessera::testing::run_tessera(
                "tune " + what + " --trials 8 --population 16 --generations 1 " +
                    "--measure-per-round 8 --model random --threads 1 --db " + good_,
                dir_->file("tune_good"));
            setup_log_ += o.out + o.err;
            if (o.code != 0) {
                good_.clear();
                return;
            }
        }
        tessera::tune::TuningDatabase db(good_);
        const std::string key = db.add_workload(tessera::te::make_op(kSpec).compute);
        std::vector<tessera::tune::TuningRecord> batch;
        for (int i = 0; i < 300; ++i) {
            tessera::tune::TuningRecord r;
            r.workload_key = key;
            r.target = "llvm -mcpu=other";
            r.fingerprint = "other";
            r.isa_class = "x86_64;other";
            r.schedule_json = R"({"version":1,"steps":[],"n":)" + std::to_string(i) + "}";
            r.measure_settings_json = std::string(R"({"op_spec":")") + kSpec + R"("})";
            r.run_secs = {1e-3 * (i + 1), 2e-3 * (i + 1)};
            batch.push_back(r);
        }
        db.commit_batch(batch);
    }
    static void TearDownTestSuite() { dir_.reset(); }

    void SetUp() override {
        if (!fs::exists(model_))
            GTEST_SKIP() << "shared models absent: " << model_;
        ASSERT_FALSE(good_.empty()) << "making the database failed:\n" << setup_log_;
        // The database closed its last connection: no WAL holds part of it.
        ASSERT_FALSE(fs::exists(good_ + "-wal") && fs::file_size(good_ + "-wal") > 0);
        good_bytes_ = slurp(good_);
        ASSERT_GE(good_bytes_.size(), 100u); // the SQLite header, page_size() reads it
        ASSERT_GT(good_bytes_.size(), 4 * page_size());
    }

    static size_t page_size() {
        const auto* h = reinterpret_cast<const unsigned char*>(good_bytes_.data());
        const size_t p = (size_t(h[16]) << 8) | h[17];
        return p == 1 ? 65536 : p;
    }

    /// The commands every database goes through: the reads of `db` (list and verify as JSON, the
    /// output most easily broken by damaged text), a build and an op run that take records from
    /// it, and tune, which writes.
    static std::vector<Command> commands() {
        return {{"db list --json", "db list --json --db {db}"},
                {"db stats", "db stats --db {db}"},
                {"db verify --json", "db verify --json --tasks-of " + model_ + " --db {db}"},
                {"db export", "db export --db {db} -o {out}.jsonl"},
                {"build --db --json", "build " + model_ + " --json --db {db} -o {out}.so"},
                {"tune --db", "tune " + model_ + kQuickTune + " --db {db}"},
                {"op run --db --json",
                 std::string("op run ") + kSpec + " --repeat 1 --json --db {db}"}};
    }

    /// `bytes` as file `name` of the scratch folder; returns its path.
    static std::string file(const std::string& name, const std::string& bytes) {
        const std::string path = dir_->file(name);
        write_file(path, bytes);
        return path;
    }

    /// A case where every command wants `w`.
    static DbCase all(const std::string& label, const std::string& path, Want w,
                      const std::string& says = "", bool shared = false) {
        return {label, path, shared, std::vector<Want>(commands().size(), w), says};
    }

    /// Runs the six commands on every case (the commands of one case at once) and checks each;
    /// prints "<figure>: cases clean N/N".
    void check_cases(const std::vector<DbCase>& cases, const std::string& figure) {
        const std::vector<Command> cmds = commands();
        int clean = 0, total = 0, read = 0, refused = 0;
        for (size_t c = 0; c < cases.size(); ++c) {
            const DbCase& k = cases[c];
            std::vector<pid_t> pids;
            std::vector<std::string> paths, scratch;
            for (size_t i = 0; i < cmds.size(); ++i) {
                const std::string s = dir_->file("cmd" + std::to_string(++commands_run_));
                std::string path = k.path;
                if (!k.shared) { // commands may write: each gets its own copy
                    path = s + (fs::is_directory(k.path) ? "_dir" : ".db");
                    fs::copy(k.path, path, fs::copy_options::recursive);
                }
                std::string args = cmds[i].args;
                args.replace(args.find("{db}"), 4, path);
                if (const size_t at = args.find("{out}"); at != std::string::npos)
                    args.replace(at, 5, s + "_out");
                pids.push_back(tessera::testing::start_tessera(args, s + ".out", s + ".err"));
                paths.push_back(path);
                scratch.push_back(s);
            }
            for (size_t i = 0; i < cmds.size(); ++i) {
                const ProcessOutput o = tessera::testing::wait_tessera(pids[i], scratch[i] + ".out",
                                                                       scratch[i] + ".err");
                ++total;
                const std::string why = cleanliness(o, paths[i], k.want[i], k.says, cmds[i].name);
                clean += why.empty();
                read += why.empty() && o.code == 0;
                refused += why.empty() && o.code != 0;
                EXPECT_TRUE(why.empty()) << k.label << ", " << cmds[i].name << " (" << paths[i]
                                         << "): " << why << "\nstderr:\n"
                                         << o.err << "stdout:\n"
                                         << o.out.substr(0, 2000);
            }
        }
        print_figure(figure, "cases clean " + std::to_string(clean) + "/" + std::to_string(total) +
                                 " (" + std::to_string(read) + " read, " + std::to_string(refused) +
                                 " refused)");
    }

    /// "" when `o` is what `want` allows for the database `path`, else what is wrong.
    static std::string cleanliness(const ProcessOutput& o, const std::string& path, Want want,
                                   const std::string& says, const std::string& command) {
        if (o.code == -1)
            return "crashed (killed by a signal)";
        // One `error:` line naming the file; tune's progress lines ("tune start  0/8 trials
        // ...", by design on stderr) may come before it, nothing else.
        int error_lines = 0, other_lines = 0;
        bool names_it = false;
        for (const std::string& line : tessera::testing::lines_of(o.err)) {
            if (line.rfind("error: ", 0) == 0) {
                ++error_lines;
                names_it =
                    line.find(path) != std::string::npos && line.find(says) != std::string::npos;
            } else {
                other_lines += command != "tune --db" || line.rfind("tune ", 0) != 0;
            }
        }
        const bool refused = o.code == 1 && error_lines == 1 && other_lines == 0 && names_it;
        // db verify's own verdict on a damaged file it could open: exit 1, nothing on stderr and
        // its JSON report on stdout, naming a failed integrity check or problem records.
        bool verify_found_damage = false;
        if (command == "db verify --json" && o.code == 1 && o.err.empty()) {
            const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
            verify_found_damage = j.is_object() && j.contains("integrity") &&
                                  j.contains("problems") &&
                                  (j["integrity"] != "ok" || !j["problems"].empty());
        }
        switch (want) {
        case Want::Read:
            return o.code == 0 ? "" : "exit " + std::to_string(o.code) + ", want 0 (a read)";
        case Want::Refuse:
            return refused ? ""
                           : "exit " + std::to_string(o.code) +
                                 ", want 1 with one `error:` line "
                                 "naming the file and saying '" +
                                 says + "'";
        case Want::Either:
            return o.code == 0 || refused || verify_found_damage
                       ? ""
                       : "exit " + std::to_string(o.code) +
                             ", want 0 or 1 with one `error:` line naming the file";
        }
        return "?";
    }

    static inline std::unique_ptr<tessera::testing::ScratchDir> dir_;
    static inline int commands_run_ = 0; ///< Names each command's files apart.
    static inline std::string model_, good_, setup_log_, good_bytes_;
};

/// A copy of the good database with its schema version raised by one, as a newer tessera would
/// record it (the schema_version table of tuner/sqlite_engine.cpp).
std::string newer_schema_copy(const std::string& good, const std::string& path) {
    fs::copy_file(good, path, fs::copy_options::overwrite_existing);
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK)
        ADD_FAILURE() << "sqlite3_open " << path;
    char* err = nullptr;
    // Back to the rollback journal, so that no -wal file beside the copy holds the change.
    if (sqlite3_exec(db,
                     "UPDATE schema_version SET version = version + 1;"
                     "PRAGMA journal_mode = DELETE;",
                     nullptr, nullptr, &err) != SQLITE_OK)
        ADD_FAILURE() << "raising the schema version of " << path << ": " << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    return path;
}

} // namespace

// A read-only mount: the good database is read by everything that only reads, and tune, which
// must write, refuses it in one line; a newer schema there is refused by all.
TEST_F(DatabaseFaults, ReadOnlyDatabases) {
    const std::string ro = dir_->file("ro");
    fs::create_directories(ro);
    fs::copy_file(good_, ro + "/good.db");
    newer_schema_copy(good_, ro + "/newer.db");
    file("ro/empty.db", "");
    // Root writes through file permissions: only a read-only mount makes the file read-only.
    if (mount(ro.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr) != 0)
        GTEST_SKIP() << "cannot bind-mount " << ro << ": " << std::strerror(errno)
                     << " (needs CAP_SYS_ADMIN)";
    // Unmounted however the test ends, so that the scratch folder can be removed.
    struct Unmount {
        std::string path;
        ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
    } unmount{ro};
    if (mount(nullptr, ro.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0)
        GTEST_SKIP() << "cannot remount " << ro << " read-only: " << std::strerror(errno);
    ASSERT_NE(access((ro + "/good.db").c_str(), W_OK), 0) << "the mount is writable";
    DbCase good = all("read-only database", ro + "/good.db", Want::Read, "", true);
    good.want[5] = Want::Refuse; // tune writes its records
    std::vector<DbCase> cases = {
        good,
        all("read-only newer schema", ro + "/newer.db", Want::Refuse, "schema version", true),
        // An empty file is an empty database, but one that cannot be written cannot get its
        // tables: no command can use it.
        all("read-only empty file", ro + "/empty.db", Want::Refuse, "", true),
    };
    check_cases(cases, "db read-only");
}

TEST_F(DatabaseFaults, NewerSchemaEmptyFileAndDirectory) {
    const std::string dir = dir_->file("a_directory.db");
    fs::create_directories(dir);
    std::vector<DbCase> cases = {
        all("newer schema", newer_schema_copy(good_, dir_->file("newer.db")), Want::Refuse,
            "newer"),
        // An empty file is a new, empty database (tuner/sqlite_engine.cpp).
        all("empty file", file("empty.db", ""), Want::Read),
        all("a directory", dir, Want::Refuse, "", true),
    };
    check_cases(cases, "db newer schema, empty file, directory");
}

// Random bytes over the header: no command may take the file for a database.
TEST_F(DatabaseFaults, GarbageOverTheHeader) {
    std::mt19937_64 rng(5);
    std::vector<DbCase> cases;
    for (int i = 0; i < fault_scale(3, 30); ++i) {
        std::string bytes = good_bytes_;
        const size_t n = 16 + rng() % 85; // the magic string and up to the whole header
        for (size_t k = 0; k < n; ++k)
            bytes[k] = static_cast<char>(rng());
        cases.push_back(
            all("header garbage " + std::to_string(i) + " (" + std::to_string(n) + " bytes)",
                file("header" + std::to_string(i) + ".db", bytes), Want::Refuse, "corrupt"));
    }
    check_cases(cases, "db header garbage");
}

// Random bytes over the pages after the first: commands that never touch a damaged page may
// succeed; the others refuse in one line.
TEST_F(DatabaseFaults, GarbageOverThePages) {
    std::mt19937_64 rng(6);
    const size_t page = page_size();
    std::vector<DbCase> cases;
    for (int i = 0; i < fault_scale(4, 40); ++i) {
        std::string bytes = good_bytes_;
        const int runs = 1 + static_cast<int>(rng() % 8);
        for (int r = 0; r < runs; ++r) {
            const size_t len = 1 + rng() % 64;
            const size_t at = page + rng() % (bytes.size() - page - len);
            for (size_t k = 0; k < len; ++k)
                bytes[at + k] = static_cast<char>(rng());
        }
        cases.push_back(
            all("page garbage " + std::to_string(i) + " (" + std::to_string(runs) + " runs)",
                file("pages" + std::to_string(i) + ".db", bytes), Want::Either));
    }
    check_cases(cases, "db page garbage");
}

// Random bytes inside the text of workloads and records (their JSON, targets, compute texts),
// where SQLite sees no damage and the commands must cope with what they read.
TEST_F(DatabaseFaults, GarbageInRecordText) {
    std::vector<size_t> texts;
    for (const char* start : {"{\"", "llvm", "tessera-compute"})
        for (size_t at = good_bytes_.find(start); at != std::string::npos;
             at = good_bytes_.find(start, at + 1))
            texts.push_back(at);
    ASSERT_GT(texts.size(), 100u);
    std::mt19937_64 rng(9);
    std::vector<DbCase> cases;
    for (int i = 0; i < fault_scale(6, 60); ++i) {
        std::string bytes = good_bytes_;
        const int runs = 1 + static_cast<int>(rng() % 4);
        for (int r = 0; r < runs; ++r) {
            const size_t at = texts[rng() % texts.size()] + rng() % 48;
            for (size_t k = 0, len = 1 + rng() % 4; k < len && at + k < bytes.size(); ++k)
                bytes[at + k] = static_cast<char>(rng());
        }
        cases.push_back(
            all("text garbage " + std::to_string(i) + " (" + std::to_string(runs) + " runs)",
                file("text" + std::to_string(i) + ".db", bytes), Want::Either));
    }
    check_cases(cases, "db text garbage");
}

// Truncations at seeded lengths: the header's page count gives them away.
TEST_F(DatabaseFaults, TruncatedDatabases) {
    std::mt19937_64 rng(8);
    std::vector<size_t> lengths = {99, good_bytes_.size() - 1};
    for (int i = 0; i < fault_scale(3, 30); ++i)
        lengths.push_back(1 + rng() % (good_bytes_.size() - 1));
    std::vector<DbCase> cases;
    for (size_t i = 0; i < lengths.size(); ++i)
        cases.push_back(
            all("truncated to " + std::to_string(lengths[i]) + " of " +
                    std::to_string(good_bytes_.size()) + " bytes",
                file("cut" + std::to_string(i) + ".db", good_bytes_.substr(0, lengths[i])),
                Want::Refuse, "corrupt"));
    check_cases(cases, "db truncated");
}
