// Fault injection for the tuner (issue 21): what a tuning cluster meets in practice, done to the
// real `tessera` binary. Tuners SIGKILLed at random moments and resumed (SQLite and PostgreSQL),
// four tuners writing into one database at once, the PostgreSQL server restarted under running
// tuners, and a disk that fills up while tuning and while building. Each case asserts what the
// documents promise (docs/CLUSTER.md, include/tessera/tuner/database.h): nothing committed is
// lost or changed, no schedule is measured twice by one tuner, every failure is one `error:`
// line and exit 1, and nothing half-written is left behind. The figures each case prints
// (FAULT-FIGURE lines) are collected by scripts/fault_suite.sh.
//
// PostgreSQL cases need TESSERA_TEST_POSTGRES_URL (scripts/with_postgres.sh), the restart case
// TESSERA_TEST_POSTGRES_RESTART too, the disk-full case the right to mount a tmpfs (root);
// each skips, saying why, without them.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/tessera_process.h"
#include "faults/fault_util.h"
#include "tessera/tuner/database.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using tessera::testing::fault_long_mode;
using tessera::testing::fault_scale;
using tessera::testing::lines_of;
using tessera::testing::print_figure;
using tessera::testing::read_text;
using tessera::tune::TuningDatabase;
using tessera::tune::TuningRecord;

/// A tiny search (8 candidates a round, no training): rounds take seconds with the local runner
/// (real compilation and timing) and milliseconds with the simulated one.
constexpr const char* kSearch = " --model random --population 24 --generations 1 "
                                "--measure-per-round 8";
/// The simulated runner with that search (tests/cli/tune_model_test.cpp's quick options).
const std::string kQuickOptions = std::string(" --runner simulated") + kSearch;

/// Seeds of the kill moments: fixed, so that a failure replays with the same schedule of kills.
constexpr uint64_t kKillSeed = 20240521;

/// Longest wait for one tuner or build, far above any normal run: past it the process is killed
/// and the case fails (a hang is a defect too), instead of ctest's timeout hiding which one.
constexpr double kProcessDeadlineSecs = 240;

std::string model_path(const std::string& name) {
    return TESSERA_SOURCE_DIR "/../shared/models/" + name + "/model.onnx";
}

// ---- processes -------------------------------------------------------------------------------

/// A tessera process started in the background, stdout and stderr into files.
class Child {
  public:
    /// Starts `env ENV tessera ARGS` (env execs tessera, so the pid is tessera's own).
    Child(const std::string& env, const std::string& args, const std::string& scratch)
        : out_file_(scratch + ".out"), err_file_(scratch + ".err") {
        const std::string cmd = "exec env " + env + " " + std::string(TESSERA_BINARY) + " " + args +
                                " >" + out_file_ + " 2>" + err_file_;
        pid_ = fork();
        if (pid_ == 0) {
            execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
    }
    ~Child() { // a case that failed half-way leaves no tuner running
        if (pid_ > 0 && !done_) {
            kill(pid_, SIGKILL);
            wait();
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const { return pid_; }
    /// Whether it has ended (reaps it when it has).
    bool done() {
        if (!done_ && waitpid(pid_, &status_, WNOHANG) == pid_)
            done_ = true;
        return done_;
    }
    /// Waits for the end; past `deadline_secs` kills it and says so in timed_out().
    void wait(double deadline_secs = kProcessDeadlineSecs) {
        const auto until = Clock::now() + std::chrono::duration<double>(deadline_secs);
        while (!done()) {
            if (Clock::now() > until && !timed_out_) {
                timed_out_ = true;
                kill(pid_, SIGKILL);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    void kill_now() { kill(pid_, SIGKILL); }

    /// Exit code; -1 while running or when a signal ended it.
    int code() const { return done_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }
    /// The signal that ended it, 0 when none did.
    int signal() const { return done_ && WIFSIGNALED(status_) ? WTERMSIG(status_) : 0; }
    bool timed_out() const { return timed_out_; }
    std::string out() const { return read_text(out_file_); }
    std::string err() const { return read_text(err_file_); }
    /// What a failure message shows of it.
    std::string describe() const {
        return "exit " + std::to_string(code()) + ", signal " + std::to_string(signal()) +
               (timed_out_ ? " (killed: past the deadline)" : "") + "\nstdout:\n" + out() +
               "stderr:\n" + err();
    }

  private:
    std::string out_file_, err_file_;
    pid_t pid_ = -1;
    int status_ = 0;
    bool done_ = false;
    bool timed_out_ = false;
};

/// The lines of stderr that are not a tuner's progress ("tune ..." lines, one per round in a
/// log): what a run said went wrong. A clean failure says it in one line starting "error:".
std::vector<std::string> problem_lines(const std::string& err) {
    std::vector<std::string> out;
    for (const std::string& line : lines_of(err))
        if (line.rfind("tune ", 0) != 0)
            out.push_back(line);
    return out;
}

/// Whether stderr is one "error: ..." line (besides progress) that holds `names`.
bool one_error_line(const std::string& err, const std::string& names) {
    const std::vector<std::string> lines = problem_lines(err);
    return lines.size() == 1 && lines[0].rfind("error: ", 0) == 0 &&
           lines[0].find(names) != std::string::npos;
}

/// Whether `text` holds `what`, ignoring case.
bool contains_nocase(std::string text, std::string what) {
    auto lower = [](std::string& s) {
        std::transform(s.begin(), s.end(), s.begin(),
                       [](unsigned char c) { return std::tolower(c); });
    };
    lower(text);
    lower(what);
    return text.find(what) != std::string::npos;
}

/// A run's --json summary: its last stdout line (null when there is none or it is not JSON).
nlohmann::json summary_of(const std::string& out) {
    const std::vector<std::string> lines = lines_of(out);
    if (lines.empty())
        return nullptr;
    return nlohmann::json::parse(lines.back(), nullptr, false);
}

/// Runs `tessera db verify --json --tasks-of MODEL --db DB`; empty when it passed, otherwise
/// what it said.
std::string verify_problems(const std::string& db, const std::string& model,
                            const std::string& scratch) {
    Child v("OMP_WAIT_POLICY=passive", "db verify --json --tasks-of " + model + " --db " + db,
            scratch);
    v.wait();
    return v.code() == 0 ? std::string() : "db verify: " + v.describe();
}

// ---- records ---------------------------------------------------------------------------------

/// Every field of a record that the database stores.
std::string content_of(const TuningRecord& r) {
    return nlohmann::json({r.workload_key, r.target, r.fingerprint, r.isa_class, r.schedule_json,
                           r.run_secs, std::isfinite(r.median_secs) ? r.median_secs : -1.0,
                           int(r.error_code), r.error_message, r.measure_settings_json,
                           r.tessera_version, r.schema_version, r.created_at})
        .dump();
}

/// What one measurement is of: the same schedule of a workload on the same target and machine.
std::string measurement_of(const TuningRecord& r) {
    // A tune measures each task's best once more after the seed rounds (marked "retime"):
    // that second measurement is no duplicate, a third one would be.
    const bool retime = nlohmann::json::parse(r.measure_settings_json).value("retime", false);
    return nlohmann::json({r.workload_key, r.target, r.fingerprint, r.schedule_json, retime})
        .dump();
}

/// Every record of a database, by id, read through the TuningDatabase API.
struct Snapshot {
    std::map<int64_t, TuningRecord> records;
    std::string integrity;

    /// Records whose measurement (measurement_of) an earlier record already holds.
    int duplicates() const {
        std::set<std::string> seen;
        int dup = 0;
        for (const auto& [id, r] : records)
            dup += seen.insert(measurement_of(r)).second ? 0 : 1;
        return dup;
    }
    /// Records of `earlier` that are missing here or differ.
    int64_t lost_from(const Snapshot& earlier) const {
        int64_t lost = 0;
        for (const auto& [id, r] : earlier.records) {
            auto it = records.find(id);
            lost += it == records.end() || content_of(it->second) != content_of(r) ? 1 : 0;
        }
        return lost;
    }
};

Snapshot snapshot(const std::string& db_path) {
    TuningDatabase db(db_path);
    Snapshot s;
    for (const std::string& key : db.workload_keys())
        for (TuningRecord& r : db.records_of(key))
            s.records.emplace(r.id, std::move(r));
    s.integrity = db.integrity_check();
    return s;
}

/// The measuring seed a record's settings name (the simulated measurer stores it): which of
/// several concurrent tuners measured it.
int64_t seed_of(const TuningRecord& r) {
    const nlohmann::json j = nlohmann::json::parse(r.measure_settings_json, nullptr, false);
    return j.is_object() && j.contains("seed") && j["seed"].is_number_integer()
               ? j["seed"].get<int64_t>()
               : -1;
}

// ---- measurer work folders -------------------------------------------------------------------

/// The tessera_measure_* folders in `tmp` whose owner file names process `pid` (-1: any owner,
/// folders without an owner file included).
std::set<std::string> measure_dirs(const std::string& tmp, pid_t pid) {
    std::set<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("tessera_measure_", 0) != 0)
            continue;
        long long owner = -1;
        std::ifstream(it->path() / "owner") >> owner;
        if (pid < 0 || owner == pid)
            out.insert(it->path().string());
    }
    return out;
}

/// The processes whose parent is `pid` (a tuner's measurement worker and compile processes).
std::set<pid_t> children_of(pid_t pid) {
    std::set<pid_t> out;
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::string stat = read_text(it->path().string() + "/stat");
        const size_t close = stat.rfind(')'); // the command name may hold spaces
        if (close == std::string::npos)
            continue;
        char state = 0;
        long long ppid = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %lld", &state, &ppid) == 2 && ppid == pid)
            out.insert(pid_t(std::stoll(name)));
    }
    return out;
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
bool running(pid_t pid) {
    const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    const size_t close = stat.rfind(')');
    char state = 0;
    return close != std::string::npos &&
           std::sscanf(stat.c_str() + close + 1, " %c", &state) == 1 && state != 'Z' &&
           state != 'X';
}

// ---- PostgreSQL ------------------------------------------------------------------------------

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::string server_url() { return env_or_empty("TESSERA_TEST_POSTGRES_URL"); }

/// `url` with its database name replaced by `dbname` (query parameters kept).
std::string with_database(const std::string& url, const std::string& dbname) {
    const size_t authority = url.find("://");
    const size_t slash = url.find('/', authority + 3);
    const size_t query = url.find('?', authority + 3);
    const std::string head = url.substr(0, slash != std::string::npos ? slash : query);
    const std::string tail = query != std::string::npos ? url.substr(query) : "";
    return head + "/" + dbname + tail;
}

/// Runs one statement on the server's test database; "" or the server's complaint.
std::string run_sql(const std::string& url, const std::string& sql) {
    PGconn* c = PQconnectdb(url.c_str());
    PQsetNoticeProcessor(
        c, [](void*, const char*) {}, nullptr); // DROP ... IF EXISTS notices
    std::string error;
    if (PQstatus(c) != CONNECTION_OK) {
        error = PQerrorMessage(c);
    } else {
        PGresult* r = PQexec(c, sql.c_str());
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            error = sql + ": " + PQerrorMessage(c);
        PQclear(r);
    }
    PQfinish(c);
    return error;
}

/// A fresh, empty server database for one case; dropped on destruction.
class FreshPostgres {
  public:
    explicit FreshPostgres(const std::string& tag) {
        name_ = "tessera_fault_" + tag + "_" + std::to_string(::getpid());
        run_sql(server_url(), "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
        error_ = run_sql(server_url(), "CREATE DATABASE " + name_);
        url_ = with_database(server_url(), name_);
    }
    ~FreshPostgres() {
        run_sql(server_url(), "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    }
    FreshPostgres(const FreshPostgres&) = delete;
    FreshPostgres& operator=(const FreshPostgres&) = delete;
    const std::string& url() const { return url_; }
    const std::string& name() const { return name_; }
    /// Why it could not be created ("" when it was).
    const std::string& error() const { return error_; }

  private:
    std::string name_, url_, error_;
};

// ---- a small disk ----------------------------------------------------------------------------

/// A tmpfs of `size` mounted on `dir` (mount -t tmpfs -o size=SIZE tmpfs DIR) for the life of
/// this object; unmounted by the destructor, whatever the case did.
class TmpfsMount {
  public:
    TmpfsMount(const std::string& dir, const std::string& size) : dir_(dir) {
        fs::create_directories(dir);
        if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0)
            mounted_ = true;
        else
            error_ = std::string(std::strerror(errno)) + " (mounting needs root or CAP_SYS_ADMIN)";
    }
    ~TmpfsMount() {
        if (mounted_ && ::umount(dir_.c_str()) != 0)
            ::umount2(dir_.c_str(), MNT_DETACH); // still busy: detach it now, freed when idle
    }
    TmpfsMount(const TmpfsMount&) = delete;
    TmpfsMount& operator=(const TmpfsMount&) = delete;
    bool mounted() const { return mounted_; }
    const std::string& error() const { return error_; }

  private:
    std::string dir_, error_;
    bool mounted_ = false;
};

/// Bytes free for writing on the file system of `dir`.
int64_t free_bytes(const std::string& dir) {
    struct statvfs s {};
    if (statvfs(dir.c_str(), &s) != 0)
        return -1;
    return int64_t(s.f_bavail) * int64_t(s.f_frsize);
}

/// Writes `dir`/filler until about `leave` bytes stay free; false when it cannot.
bool fill_leaving(const std::string& dir, int64_t leave) {
    const int64_t n = free_bytes(dir) - leave;
    std::ofstream out(dir + "/filler", std::ios::binary | std::ios::app);
    const std::vector<char> chunk(64 * 1024, 'x');
    for (int64_t done = 0; n > 0 && done < n && out; done += int64_t(chunk.size()))
        out.write(chunk.data(), std::streamsize(std::min<int64_t>(n - done, chunk.size())));
    out.close();
    return bool(out);
}

// ---- the fixture -----------------------------------------------------------------------------

class TunerFaults : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::path(::testing::TempDir()) /
               ("tessera_tuner_faults_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    bool have_model(const std::string& name) const { return fs::exists(model_path(name)); }

    void kill_and_resume(const std::string& db, const std::string& engine);
    void concurrent_tuners(const std::string& db, const std::string& engine);

    fs::path dir_;
};

/// Case 1 and 2: tuners of mlp (local runner: real builds, a measurer work folder) SIGKILLed at
/// seeded random moments, each followed by the next start on the same database.
void TunerFaults::kill_and_resume(const std::string& db, const std::string& engine) {
    const std::string model = model_path("mlp");
    const std::string tmp = path("tmp_" + engine); // the tuners' TMPDIR
    fs::create_directories(tmp);
    const std::string env = "OMP_WAIT_POLICY=passive TMPDIR=" + tmp;
    const std::string tune = "tune " + model + kSearch + " --db " + db;
    const int kills = fault_scale(4, 20);
    std::mt19937_64 rng(kKillSeed);
    // Every fourth kill early: the first round of a run commits after about a second, so these
    // land before it (or while it is committing); the others anywhere in the first rounds.
    std::uniform_real_distribution<double> early(0.3, 0.9), any(0.3, 6.0);

    Snapshot seen; // every record seen so far
    int survived = 0, before_first_commit = 0, duplicates = 0, abandoned = 0, left_dirs = 0;
    int orphans = 0;
    int64_t lost = 0;
    bool last_kill_ok = false;            // the database was sound after the previous kill
    std::set<std::string> abandoned_dirs; // the work folders of the tuner killed last
    for (int i = 0; i <= kills; ++i) {
        const bool resume_only = i == kills;
        const std::string scratch = path(engine + "_run" + std::to_string(i));
        Child t(env, tune + (resume_only ? " --trials 8 --json" : " --trials 100000"), scratch);
        const auto started = Clock::now();
        if (i > 0) {
            // Once this tuner's measurer exists (its own folder appears, or the run ended), the
            // sweep it makes first has run: the killed tuner's folders must be gone.
            while (!t.done() && measure_dirs(tmp, t.pid()).empty() &&
                   Clock::now() - started < std::chrono::seconds(60))
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            int left = 0;
            for (const std::string& d : abandoned_dirs)
                left += fs::exists(d) ? 1 : 0;
            EXPECT_EQ(left, 0) << "kill " << i << ": the killed tuner's work folders outlived the "
                               << "next start";
            abandoned += left;
            survived += last_kill_ok && left == 0 && !(t.done() && t.code() != 0) ? 1 : 0;
        }
        if (resume_only) {
            t.wait();
            ASSERT_EQ(t.code(), 0) << "the resume after " << kills << " kills: " << t.describe();
            const nlohmann::json j = summary_of(t.out());
            ASSERT_TRUE(j.is_object()) << t.out();
            const Snapshot end = snapshot(db);
            EXPECT_EQ(end.integrity, "ok");
            lost += end.lost_from(seen);
            duplicates = end.duplicates();
            EXPECT_EQ(end.lost_from(seen), 0) << "the resume lost or changed records";
            EXPECT_EQ(end.duplicates(), 0) << "the resume measured a schedule again";
            EXPECT_EQ(int64_t(end.records.size()),
                      int64_t(seen.records.size()) + j.at("trials").get<int64_t>())
                << "the database must hold what it held plus what the resume reports";
            EXPECT_EQ(verify_problems(db, model, path(engine + "_verify")), "");
            // The resume removed its own folder; nothing of the killed ones is left either.
            abandoned += int(measure_dirs(tmp, -1).size());
            EXPECT_EQ(measure_dirs(tmp, -1), std::set<std::string>());
            break;
        }

        const double at = (i % 4 == 0 ? early : any)(rng);
        while (Clock::now() - started < std::chrono::duration<double>(at) && !t.done())
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ASSERT_FALSE(t.done()) << "the tuner ended before its kill: " << t.describe();
        const std::set<pid_t> children = children_of(t.pid());
        std::printf("%s kill %d of %d at %.2f s (%zu child processes)\n", engine.c_str(), i + 1,
                    kills, at, children.size());
        std::fflush(stdout);
        t.kill_now();
        t.wait();
        ASSERT_EQ(t.signal(), SIGKILL) << t.describe();
        abandoned_dirs = measure_dirs(tmp, t.pid());
        left_dirs += int(abandoned_dirs.size());
        // Its measurement worker and compile processes end with it (the worker on the closed
        // socket, a compile process by its parent-death signal), not live on as orphans.
        int alive = int(children.size());
        for (const auto until = Clock::now() + std::chrono::seconds(20);
             alive > 0 && Clock::now() < until;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            alive = 0;
            for (pid_t c : children)
                alive += running(c) ? 1 : 0;
        }
        EXPECT_EQ(alive, 0) << "kill " << i + 1 << ": processes of the killed tuner live on";
        orphans += alive;

        const Snapshot now = snapshot(db);
        const int64_t lost_now = now.lost_from(seen);
        const int dup_now = now.duplicates();
        EXPECT_EQ(now.integrity, "ok") << "after kill " << i + 1;
        EXPECT_EQ(lost_now, 0) << "kill " << i + 1 << " lost or changed committed records";
        EXPECT_EQ(dup_now, 0) << "after kill " << i + 1 << ": a schedule was measured twice";
        lost += lost_now;
        duplicates = dup_now;
        before_first_commit += now.records.size() == seen.records.size() ? 1 : 0;
        last_kill_ok = now.integrity == "ok" && lost_now == 0 && dup_now == 0;
        seen = now;
    }
    EXPECT_GT(seen.records.size(), 0u) << "no kill came after a committed round";
    EXPECT_GT(left_dirs, 0) << "no killed tuner had a work folder: the sweep went untested";
    const std::string name = engine + " kill-resume";
    print_figure(name + " kills survived", std::to_string(survived) + "/" + std::to_string(kills));
    print_figure(name + " kills before the run's first commit",
                 std::to_string(before_first_commit));
    print_figure(name + " lost records", std::to_string(lost));
    print_figure(name + " duplicate measurements", std::to_string(duplicates));
    print_figure(name + " work dirs left by killed tuners", std::to_string(left_dirs));
    print_figure(name + " abandoned work dirs", std::to_string(abandoned));
    print_figure(name + " orphaned processes", std::to_string(orphans));
}

/// Case 3: four tuners of mlp (simulated runner, different seeds) into one database at once.
void TunerFaults::concurrent_tuners(const std::string& db, const std::string& engine) {
    const std::string model = model_path("mlp");
    const int n = 4;
    const int trials = fault_scale(64, 400);
    std::vector<std::unique_ptr<Child>> tuners;
    for (int i = 0; i < n; ++i)
        tuners.push_back(std::make_unique<Child>("OMP_WAIT_POLICY=passive",
                                                 "tune " + model + kQuickOptions + " --trials " +
                                                     std::to_string(trials) + " --seed " +
                                                     std::to_string(11 + i) + " --json --db " + db,
                                                 path(engine + "_tuner" + std::to_string(i))));
    std::map<int64_t, int64_t> reported; // seed -> trials in its summary
    int64_t sum = 0;
    int clean = 0;
    for (int i = 0; i < n; ++i) {
        Child& t = *tuners[size_t(i)];
        t.wait();
        EXPECT_EQ(t.code(), 0) << "tuner " << i << ": " << t.describe();
        EXPECT_EQ(problem_lines(t.err()), std::vector<std::string>()) << "tuner " << i;
        const nlohmann::json j = summary_of(t.out());
        if (t.code() != 0 || !j.is_object())
            continue;
        ++clean;
        reported[11 + i] = j.at("trials").get<int64_t>();
        sum += j.at("trials").get<int64_t>();
        EXPECT_EQ(j.at("trials").get<int>(), trials) << "tuner " << i;
    }
    const Snapshot s = snapshot(db);
    EXPECT_EQ(s.integrity, "ok");
    EXPECT_EQ(int64_t(s.records.size()), sum)
        << "the database must hold exactly the trials the tuners reported";
    // Per tuner (the simulated measurer's seed is in each record's settings): its own count,
    // and never one schedule twice. Across tuners nothing is promised (docs/CLUSTER.md: each
    // tuner dedups against what it read and measured itself), so those are only counted.
    std::map<int64_t, int64_t> stored;
    std::map<int64_t, std::set<std::string>> measured;
    int own_duplicates = 0;
    std::set<std::string> any;
    int across = 0;
    for (const auto& [id, r] : s.records) {
        const int64_t seed = seed_of(r);
        ++stored[seed];
        own_duplicates += measured[seed].insert(measurement_of(r)).second ? 0 : 1;
    }
    for (const auto& [seed, set] : measured)
        for (const std::string& m : set)
            across += any.insert(m).second ? 0 : 1;
    EXPECT_EQ(stored, reported) << "records per tuner (by seed) against their summaries";
    EXPECT_EQ(own_duplicates, 0) << "a tuner measured one of its schedules twice";
    EXPECT_EQ(verify_problems(db, model, path(engine + "_verify")), "");
    const std::string name = engine + " concurrent tuners";
    print_figure(name + " clean exits", std::to_string(clean) + "/" + std::to_string(n));
    print_figure(name + " records vs reported trials",
                 std::to_string(s.records.size()) + "/" + std::to_string(sum));
    print_figure(name + " duplicates within a tuner", std::to_string(own_duplicates));
    print_figure(name + " duplicates across tuners", std::to_string(across));
}

} // namespace

// 1. Killed tuners resume, SQLite.
TEST_F(TunerFaults, KilledTunersResumeSqlite) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    kill_and_resume(path("kill.db"), "sqlite");
}

// 2. The same with PostgreSQL.
TEST_F(TunerFaults, KilledTunersResumePostgres) {
    if (server_url().empty())
        GTEST_SKIP() << "no PostgreSQL server: set TESSERA_TEST_POSTGRES_URL "
                        "(scripts/with_postgres.sh)";
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    FreshPostgres pg("kill");
    ASSERT_EQ(pg.error(), "");
    kill_and_resume(pg.url(), "postgres");
}

// 3. Four concurrent tuners on one SQLite file and on one PostgreSQL database.
TEST_F(TunerFaults, ConcurrentTunersSqlite) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    concurrent_tuners(path("shared.db"), "sqlite");
}

TEST_F(TunerFaults, ConcurrentTunersPostgres) {
    if (server_url().empty())
        GTEST_SKIP() << "no PostgreSQL server: set TESSERA_TEST_POSTGRES_URL "
                        "(scripts/with_postgres.sh)";
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    FreshPostgres pg("concurrent");
    ASSERT_EQ(pg.error(), "");
    concurrent_tuners(pg.url(), "postgres");
}

// 4. The PostgreSQL server restarted under running tuners: each one reconnects and finishes or
// stops with one error line naming the database; nothing committed is lost.
TEST_F(TunerFaults, PostgresRestartUnderRunningTuners) {
    const std::string restart = env_or_empty("TESSERA_TEST_POSTGRES_RESTART");
    if (server_url().empty() || restart.empty())
        GTEST_SKIP() << "no PostgreSQL server to restart: set TESSERA_TEST_POSTGRES_URL and "
                        "TESSERA_TEST_POSTGRES_RESTART (scripts/with_postgres.sh)";
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    FreshPostgres pg("restart");
    ASSERT_EQ(pg.error(), "");
    const std::string model = model_path("mlp");
    // Schema first, so that the tuners all start on the same database.
    { TuningDatabase create(pg.url()); }
    const int n = fault_scale(3, 4);
    const int rounds = fault_scale(1, 3); // restarts
    const std::string budget = std::to_string(fault_scale(10, 40));
    std::vector<std::unique_ptr<Child>> tuners;
    for (int i = 0; i < n; ++i)
        tuners.push_back(std::make_unique<Child>(
            "OMP_WAIT_POLICY=passive",
            "tune " + model + kQuickOptions + " --trials 1000000 --time-budget " + budget +
                " --seed " + std::to_string(21 + i) + " --json --db " + pg.url(),
            path("tuner" + std::to_string(i))));
    // Every tuner has committed rounds before the server goes away.
    Snapshot before;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (bool all = false; !all && Clock::now() < deadline;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        before = snapshot(pg.url());
        std::map<int64_t, int> per_seed;
        for (const auto& [id, r] : before.records)
            ++per_seed[seed_of(r)];
        all = true;
        for (int i = 0; i < n; ++i)
            all = all && per_seed[21 + i] >= 8;
    }
    for (int k = 0; k < rounds; ++k) {
        if (k > 0)
            std::this_thread::sleep_for(std::chrono::seconds(2));
        before = snapshot(pg.url());
        EXPECT_GT(before.records.size(), 0u) << "no tuner committed before the restart";
        const int rc = std::system((restart + " >" + path("restart.log") + " 2>&1").c_str());
        ASSERT_EQ(rc, 0) << "restarting the server failed: " << read_text(path("restart.log"));
    }
    int continued = 0, stopped = 0, crashed = 0;
    for (int i = 0; i < n; ++i) {
        Child& t = *tuners[size_t(i)];
        t.wait();
        if (t.code() == 0 && problem_lines(t.err()).empty() && summary_of(t.out()).is_object()) {
            ++continued;
        } else if (t.code() == 1 && one_error_line(t.err(), "database '" + pg.name() + "'")) {
            ++stopped;
        } else {
            ++crashed;
            ADD_FAILURE() << "tuner " << i << " neither finished nor stopped with one error line "
                          << "naming the database: " << t.describe();
        }
    }
    const Snapshot after = snapshot(pg.url());
    EXPECT_EQ(after.integrity, "ok");
    EXPECT_EQ(after.lost_from(before), 0) << "records committed before the restart were lost";
    EXPECT_EQ(verify_problems(pg.url(), model, path("verify")), "");
    print_figure("postgres restart tuners continued", std::to_string(continued));
    print_figure("postgres restart tuners stopped cleanly", std::to_string(stopped));
    print_figure("postgres restart tuners crashed", std::to_string(crashed));
    print_figure("postgres restart lost records", std::to_string(after.lost_from(before)));
}

// 5. Disk full while tuning and while building: one error line and exit 1, the database still
// readable and whole, no library (nor temporary) half written.
TEST_F(TunerFaults, DiskFullWhileTuningAndBuilding) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    const std::string model = model_path("mlp");
    const std::string disk = path("disk");
    TmpfsMount mount(disk, "4m");
    if (!mount.mounted())
        GTEST_SKIP() << "cannot mount a tmpfs on " << disk << ": " << mount.error();
    int clean = 0, attempts = 0, partial = 0;
    // A clean failure: exit 1, one error line (besides progress) naming what could not be
    // written and saying there was no space.
    auto clean_error = [&](Child& c, const std::string& what, const std::string& names) {
        ++attempts;
        const std::vector<std::string> lines = problem_lines(c.err());
        const bool ok = c.code() == 1 && one_error_line(c.err(), names) &&
                        contains_nocase(lines[0], "no space");
        EXPECT_TRUE(ok) << what << ": want exit 1 and one error line naming " << names
                        << " and saying no space; got " << c.describe();
        clean += ok ? 1 : 0;
    };

    // Tuning: a database with committed records, then the disk fills under the next tuner.
    const std::string db = disk + "/tune.db";
    const std::string tune = "tune " + model + kQuickOptions + " --db " + db;
    {
        Child first("OMP_WAIT_POLICY=passive", tune + " --trials 48", path("first"));
        first.wait();
        ASSERT_EQ(first.code(), 0) << first.describe();
    }
    const Snapshot committed = snapshot(db);
    ASSERT_EQ(committed.records.size(), 48u);
    ASSERT_TRUE(fill_leaving(disk, 96 * 1024)) << "cannot fill " << disk;
    {
        Child full("OMP_WAIT_POLICY=passive", tune + " --trials 1000000", path("full"));
        full.wait();
        clean_error(full, "tuning onto a full disk", db);
    }
    // Still full: the database reads, is sound and holds what was committed.
    const Snapshot after = snapshot(db);
    EXPECT_EQ(after.integrity, "ok");
    EXPECT_EQ(after.lost_from(committed), 0) << "committed records were lost on a full disk";
    EXPECT_EQ(after.duplicates(), 0);
    // With room again, tuning resumes on it.
    fs::remove(disk + "/filler");
    {
        Child again("OMP_WAIT_POLICY=passive", tune + " --trials 8", path("again"));
        again.wait();
        EXPECT_EQ(again.code(), 0) << again.describe();
        EXPECT_EQ(snapshot(db).records.size(), after.records.size() + 8);
    }

    // Building: the library onto the full disk, then the build's temporaries onto it.
    ASSERT_TRUE(fill_leaving(disk, 64 * 1024)) << "cannot fill " << disk;
    auto leftovers = [](const std::string& dir, const std::string& prefix) {
        std::vector<std::string> found;
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
            if (it->path().filename().string().rfind(prefix, 0) == 0)
                found.push_back(it->path().filename().string());
        return found;
    };
    {
        Child build("OMP_WAIT_POLICY=passive", "build " + model + " --no-db -o " + disk + "/m.so",
                    path("build"));
        build.wait();
        clean_error(build, "building onto a full disk", disk + "/m.so");
        const std::vector<std::string> left = leftovers(disk, "m.so");
        EXPECT_EQ(left, std::vector<std::string>()) << "a partial library was left";
        partial += int(left.size());
    }
    {
        const std::string out_dir = path("out");
        fs::create_directories(out_dir);
        Child build("OMP_WAIT_POLICY=passive TMPDIR=" + disk,
                    "build " + model + " --no-db -o " + out_dir + "/m.so", path("build_tmp"));
        build.wait();
        clean_error(build, "building with TMPDIR on a full disk", disk);
        std::vector<std::string> left = leftovers(out_dir, "m.so");
        for (const std::string& t : leftovers(disk, "tessera_"))
            left.push_back(t);
        EXPECT_EQ(left, std::vector<std::string>()) << "a partial library or temporaries were left";
        partial += int(left.size());
    }
    print_figure("disk full clean errors", std::to_string(clean) + "/" + std::to_string(attempts));
    print_figure("disk full partial libraries left", std::to_string(partial));
}
