// Importing across processes: four processes importing the same records into one file add each
// record exactly once (the identity check runs inside the write transaction), and an importer
// killed with SIGKILL leaves whole imports only. (Plain commits under the same conditions are
// covered by database_test.cpp.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tessera/ir/type.h"
#include "tessera/te/op_library.h"
#include "tessera/tuner/database.h"

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;

class TempDb {
  public:
    explicit TempDb(const std::string& name)
        : dir_(fs::temp_directory_path() /
               ("tessera_dbimp_" + std::to_string(::getpid()) + "_" + name)) {
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    ~TempDb() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string path() const { return (dir_ / "t.db").string(); }

  private:
    fs::path dir_;
};

/// `n` distinct ok records of `key`, numbered from `first`, as an export would carry them.
std::vector<TuningRecord> records(const std::string& key, int first, int n) {
    std::vector<TuningRecord> out;
    for (int i = first; i < first + n; ++i) {
        TuningRecord r;
        r.workload_key = key;
        r.target = "llvm -mcpu=other";
        r.fingerprint = "fp_remote";
        r.isa_class = "x86_64;avx2";
        r.schedule_json = R"({"version":1,"n":)" + std::to_string(i) + "}";
        r.run_secs = {1e-4 * (1 + i % 17), 1e-4 * (1 + i % 13)};
        r.created_at = "2026-05-01T00:00:00Z";
        r.tessera_version = "0.1.0";
        r.schema_version = 2;
        out.push_back(r);
    }
    return out;
}

std::string add_matmul(TuningDatabase& db) {
    te::Tensor a = te::placeholder({7, 13}, ir::DataType::f32(), "A");
    te::Tensor b = te::placeholder({13, 127}, ir::DataType::f32(), "B");
    return db.add_workload(te::make_compute({a, b}, {te::matmul(a, b)}));
}

TEST(DbImportProcesses, FourProcessesImportingTheSameRecordsAddEachOnce) {
    TempDb tmp("four");
    std::string key;
    {
        TuningDatabase db(tmp.path());
        key = add_matmul(db);
    }
    constexpr int kProcs = 4, kRecords = 200;
    std::vector<pid_t> kids;
    for (int p = 0; p < kProcs; ++p) {
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int status = 0;
            try {
                TuningDatabase db(tmp.path());
                // Each process imports the same records in a different chunking.
                int chunk = 20 + 30 * p;
                for (int first = 0; first < kRecords; first += chunk)
                    db.import_records(records(key, first, std::min(chunk, kRecords - first)));
            } catch (...) {
                status = 1;
            }
            ::_exit(status);
        }
        kids.push_back(pid);
    }
    for (pid_t pid : kids) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    TuningDatabase db(tmp.path());
    EXPECT_EQ(db.num_records(), kRecords);
    EXPECT_EQ(db.measured_schedules(key).size(), size_t(kRecords));
}

TEST(DbImportProcesses, SigkillMidImportKeepsWholeImportsOnly) {
    TempDb tmp("kill");
    std::string key;
    {
        TuningDatabase db(tmp.path());
        key = add_matmul(db);
    }
    constexpr int kPerImport = 500;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        try {
            TuningDatabase db(tmp.path());
            for (int i = 0; i < 2000; ++i) { // bounded, should the parent fail
                db.import_records(records(key, i * kPerImport, kPerImport));
                if (i == 1) {
                    char c = 'x'; // two imports are committed: the parent may kill us now
                    if (::write(fds[1], &c, 1) != 1)
                        ::_exit(2);
                }
            }
        } catch (...) {
            ::_exit(1);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    char c = 0;
    ASSERT_EQ(::read(fds[0], &c, 1), 1);
    ::close(fds[0]);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    TuningDatabase db(tmp.path());
    int64_t n = db.num_records();
    EXPECT_GE(n, 2 * kPerImport);
    EXPECT_EQ(n % kPerImport, 0) << n; // whole imports only
    // Re-importing what was committed adds nothing; the file is still writable.
    ImportCounts again = db.import_records(records(key, 0, int(n)));
    EXPECT_EQ(again.records_added, 0);
    EXPECT_EQ(again.duplicates, n);
}

} // namespace
} // namespace tessera::tune
