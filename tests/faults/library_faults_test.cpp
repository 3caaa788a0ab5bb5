// Fault injection into built model libraries: many damaged copies of one library given to
// `tessera run`, `tessera bench` and the C API (dlopen in a forked child, so that a crash is
// counted instead of ending the test program). Damage: seeded single-byte flips inside the plan
// and inside the weights (located through the ELF symbol table), truncations at seeded lengths,
// an empty file, a text file named .so, a foreign ELF (a copy of libm) and an ELF header for
// another machine (aarch64). Every one must be refused: exit 1 with one `error:` line naming the
// file from the tools, -1 and a reason in tessera_model_last_error() from the C API, never a
// crash. tests/cli/run_bench_test.cpp and tests/runtime/model_plan_test.cpp check single
// instances of some of these; here it is many at once, with the figures of the fault suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/model_library_loader.h"
#include "common/tessera_process.h"
#include "faults/fault_util.h"
#include "tessera/runtime/tessera_model.h"

namespace {

namespace fs = std::filesystem;
using tessera::testing::fault_scale;
using tessera::testing::print_figure;
using tessera::testing::ProcessOutput;

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Where a defined symbol's bytes lie in a 64-bit ELF file.
struct SymbolBytes {
    uint64_t offset = 0; ///< File offset.
    uint64_t size = 0;   ///< st_size.
};

/// Finds `name` in the .dynsym or .symtab of the ELF image `elf`; nullopt when absent.
std::optional<SymbolBytes> find_symbol(const std::string& elf, const std::string& name) {
    Elf64_Ehdr eh{};
    if (elf.size() < sizeof eh)
        return std::nullopt;
    std::memcpy(&eh, elf.data(), sizeof eh);
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > elf.size())
        return std::nullopt;
    auto section = [&](size_t i) {
        Elf64_Shdr sh{};
        std::memcpy(&sh, elf.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
        return sh;
    };
    for (size_t i = 0; i < eh.e_shnum; ++i) {
        const Elf64_Shdr symtab = section(i);
        if ((symtab.sh_type != SHT_DYNSYM && symtab.sh_type != SHT_SYMTAB) ||
            symtab.sh_link >= eh.e_shnum || symtab.sh_offset + symtab.sh_size > elf.size())
            continue;
        const Elf64_Shdr strtab = section(symtab.sh_link);
        for (uint64_t k = 0; k < symtab.sh_size / sizeof(Elf64_Sym); ++k) {
            Elf64_Sym s{};
            std::memcpy(&s, elf.data() + symtab.sh_offset + k * sizeof s, sizeof s);
            if (s.st_shndx == SHN_UNDEF || s.st_shndx >= eh.e_shnum ||
                strtab.sh_offset + s.st_name + name.size() >= elf.size() ||
                elf.compare(strtab.sh_offset + s.st_name, name.size() + 1,
                            std::string(name.c_str(), name.size() + 1)) != 0)
                continue;
            const Elf64_Shdr in = section(s.st_shndx);
            if (in.sh_type == SHT_NOBITS)
                return std::nullopt;
            return SymbolBytes{in.sh_offset + (s.st_value - in.sh_addr), s.st_size};
        }
    }
    return std::nullopt;
}

/// The path of the libm.so.6 this process has loaded (a real ELF library without tessera
/// symbols), or "" when it has none.
std::string loaded_libm() {
    void* h = dlopen("libm.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return "";
    link_map* map = nullptr;
    std::string path;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
        path = map->l_name;
    dlclose(h);
    return path;
}

/// What the C API said about a damaged library: "dlopen: ...", "symbol: NAME", "create: ...",
/// "run: ..." (each a refusal) or "accepted" (it created an instance and ran it).
std::string c_api_verdict(const std::string& path) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* why = dlerror();
        return std::string("dlopen: ") + (why ? why : "");
    }
    auto sym = [&](const char* name) { return dlsym(h, name); };
    auto create = reinterpret_cast<int (*)(TesseraModel**)>(sym("tessera_model_create"));
    auto last_error = reinterpret_cast<const char* (*)()>(sym("tessera_model_last_error"));
    auto num_inputs =
        reinterpret_cast<int (*)(const TesseraModel*)>(sym("tessera_model_num_inputs"));
    auto num_outputs =
        reinterpret_cast<int (*)(const TesseraModel*)>(sym("tessera_model_num_outputs"));
    auto input_info = reinterpret_cast<int (*)(const TesseraModel*, int, TesseraTensorInfo*)>(
        sym("tessera_model_input_info"));
    auto output_info = reinterpret_cast<int (*)(const TesseraModel*, int, TesseraTensorInfo*)>(
        sym("tessera_model_output_info"));
    auto run = reinterpret_cast<int (*)(TesseraModel*, const void* const*, void* const*)>(
        sym("tessera_model_run"));
    if (!create || !last_error || !num_inputs || !num_outputs || !input_info || !output_info ||
        !run)
        return "symbol: tessera_model_* missing";
    TesseraModel* m = nullptr;
    if (create(&m) != 0)
        return std::string("create: ") + last_error();
    // Created: run it on zeros (the size of each buffer from the declared shapes). Reaching
    // here at all means the damage went unnoticed.
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<const void*> ins;
    std::vector<void*> outs;
    auto bytes_of = [](const TesseraTensorInfo& t) {
        size_t n = 8; // the widest element
        for (int d = 0; d < t.rank; ++d)
            n *= static_cast<size_t>(std::max<int64_t>(t.shape[d], 1));
        return n;
    };
    for (int i = 0; i < num_inputs(m); ++i) {
        TesseraTensorInfo t{};
        if (input_info(m, i, &t) != 0)
            return std::string("run: ") + last_error();
        bufs.emplace_back(bytes_of(t));
        ins.push_back(bufs.back().data());
    }
    for (int i = 0; i < num_outputs(m); ++i) {
        TesseraTensorInfo t{};
        if (output_info(m, i, &t) != 0)
            return std::string("run: ") + last_error();
        bufs.emplace_back(bytes_of(t));
        outs.push_back(bufs.back().data());
    }
    if (run(m, ins.data(), outs.data()) != 0)
        return std::string("run: ") + last_error();
    return "accepted";
}

/// Forks a child that writes c_api_verdict(path) to `report` and exits 0.
pid_t start_c_api_child(const std::string& path, const std::string& report) {
    const pid_t pid = fork();
    if (pid == 0) {
        const std::string verdict = c_api_verdict(path);
        std::ofstream(report, std::ios::trunc) << verdict;
        _exit(0);
    }
    return pid;
}

/// One damaged library and what the refusals must mention besides its path.
struct Damaged {
    std::string label; ///< "plan flip 3 at byte 1234", ...
    std::string path;  ///< Where refuse_all writes it (and removes it after).
    /// Its bytes, made when it is tested (long mode has a few gigabytes of them in all).
    std::function<std::string()> bytes;
    std::string tool_says;  ///< In the tools' error line ("" for no particular text).
    std::string c_api_says; ///< Prefix of the C API verdict, e.g. "create: " ("" for any).
    std::string c_api_text; ///< In the C API verdict ("" for no particular text).
    bool c_api = true;      ///< Whether to give it to the C API too.
};

/// Counts of one tool over the damaged libraries.
struct Tally {
    int total = 0, refused = 0, crashes = 0;
};

/// mlp built once (untuned) for every test of the suite; its bytes and where its plan and
/// weights lie in them.
class LibraryFaults : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = std::make_unique<tessera::testing::ScratchDir>("tessera_library_faults");
        model_dir_ = tessera::testing::shared_models_dir() + "/mlp";
        if (!fs::exists(model_dir_ + "/model.onnx"))
            return;
        const ProcessOutput o = tessera::testing::run_tessera(
            "build " + model_dir_ + "/model.onnx --no-db -o " + dir_->file("mlp.so"),
            dir_->file("build"));
        build_log_ = o.out + o.err;
        if (o.code != 0)
            return;
        lib_ = slurp(dir_->file("mlp.so"));
        plan_ = find_symbol(lib_, "tessera_model_plan");
        weights_ = find_symbol(lib_, "tessera_model_weights");
        const std::optional<SymbolBytes> plan_size = find_symbol(lib_, "tessera_model_plan_size");
        if (plan_ && plan_size && plan_size->size == sizeof(uint64_t)) {
            // The plan's own length: bytes of the symbol past it (alignment padding) are
            // never read, so a flip there is no damage.
            uint64_t n = 0;
            std::memcpy(&n, lib_.data() + plan_size->offset, sizeof n);
            plan_->size = std::min(plan_->size, n);
        } else {
            plan_.reset();
        }
    }
    static void TearDownTestSuite() { dir_.reset(); }

    void SetUp() override {
        if (!fs::exists(model_dir_ + "/model.onnx"))
            GTEST_SKIP() << "shared models absent: " << model_dir_;
        ASSERT_FALSE(lib_.empty()) << "tessera build failed:\n" << build_log_;
        ASSERT_TRUE(plan_ && plan_->size > 0) << "no tessera_model_plan in the library";
        ASSERT_TRUE(weights_ && weights_->size > 0) << "no tessera_model_weights in the library";
    }

    /// The path of the damaged library `name` in the scratch folder.
    static std::string damaged(const std::string& name) { return dir_->file(name); }

    /// `count` copies of the library, each with one byte flipped (a seeded nonzero XOR) at a
    /// seeded position of `where`; `says(offset in where)` is what the refusals must say.
    static std::vector<Damaged> flips(const std::string& what, const SymbolBytes& where, int count,
                                      uint64_t seed,
                                      const std::function<std::string(uint64_t)>& says) {
        std::mt19937_64 rng(seed);
        std::vector<Damaged> v;
        for (int i = 0; i < count; ++i) {
            const uint64_t at = where.offset + rng() % where.size;
            const auto mask = static_cast<unsigned char>(1 + rng() % 255);
            auto bytes = [at, mask] {
                std::string b = lib_;
                b[at] = static_cast<char>(static_cast<unsigned char>(b[at]) ^ mask);
                return b;
            };
            const std::string text = says(at - where.offset);
            v.push_back({what + " flip " + std::to_string(i) + " at file byte " +
                             std::to_string(at) + " (xor " + std::to_string(mask) + ")",
                         damaged(what + "_flip" + std::to_string(i) + ".so"), bytes, text,
                         "create: ", text});
        }
        return v;
    }

    /// Gives every damaged library to run, bench and the C API (the three at once for each
    /// library) and checks each refusal; prints the figures under `figure` and returns nothing:
    /// failures are the test's.
    void refuse_all(const std::vector<Damaged>& libs, const std::string& figure) {
        const std::string input = "input=" + model_dir_ + "/test_data_set_0/input_0.npy";
        std::map<std::string, Tally> tally;
        for (size_t i = 0; i < libs.size(); ++i) {
            const Damaged& d = libs[i];
            SCOPED_TRACE(d.label + ": " + d.path);
            write_file(d.path, d.bytes());
            const std::string scratch = dir_->file("cmd" + std::to_string(i));
            const std::string run_args =
                "run " + d.path + " --input " + input + " --output " + scratch + "_out --threads 1";
            const std::string bench_args = "bench " + d.path + " --warmup 0 --repeat 1 --threads 1";
            const pid_t run_pid = tessera::testing::start_tessera(run_args, scratch + "_run.out",
                                                                  scratch + "_run.err");
            const pid_t bench_pid = tessera::testing::start_tessera(
                bench_args, scratch + "_bench.out", scratch + "_bench.err");
            const pid_t api_pid = d.c_api ? start_c_api_child(d.path, scratch + "_api.txt") : -1;
            for (const auto& [tool, pid] : {std::pair<std::string, pid_t>{"run", run_pid},
                                            std::pair<std::string, pid_t>{"bench", bench_pid}}) {
                const ProcessOutput o = tessera::testing::wait_tessera(
                    pid, scratch + "_" + tool + ".out", scratch + "_" + tool + ".err");
                Tally& t = tally[tool];
                ++t.total;
                if (o.code == -1)
                    ++t.crashes;
                const std::vector<std::string> lines = tessera::testing::lines_of(o.err);
                const bool refused = o.code == 1 && lines.size() == 1 &&
                                     lines[0].rfind("error: ", 0) == 0 &&
                                     lines[0].find(d.path) != std::string::npos &&
                                     lines[0].find(d.tool_says) != std::string::npos;
                t.refused += refused;
                EXPECT_TRUE(refused)
                    << tool << " exit " << o.code << " (want 1, one `error:` "
                    << "line naming the file and saying '" << d.tool_says << "'), stderr:\n"
                    << o.err << "stdout:\n"
                    << o.out;
            }
            if (api_pid < 0) {
                fs::remove(d.path);
                continue;
            }
            int status = 0;
            waitpid(api_pid, &status, 0);
            fs::remove(d.path);
            Tally& t = tally["C API"];
            ++t.total;
            const std::string verdict = tessera::testing::read_text(scratch + "_api.txt");
            const bool crashed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            t.crashes += crashed;
            const bool refused = !crashed && !verdict.empty() && verdict != "accepted" &&
                                 verdict.rfind(d.c_api_says, 0) == 0 &&
                                 verdict.find(d.c_api_text) != std::string::npos &&
                                 verdict.size() > verdict.find(": ") + 2; // a reason is given
            t.refused += refused;
            EXPECT_TRUE(refused) << "C API: "
                                 << (crashed ? "crashed (status " + std::to_string(status) + ")"
                                             : verdict)
                                 << "; want '" << d.c_api_says << "...' saying '" << d.c_api_text
                                 << "'";
        }
        int crashes = 0;
        for (const char* tool : {"run", "bench", "C API"}) {
            const Tally& t = tally[tool];
            crashes += t.crashes;
            if (t.total > 0)
                print_figure(figure + " refused by " + tool,
                             std::to_string(t.refused) + "/" + std::to_string(t.total));
        }
        print_figure(figure + " crashes", std::to_string(crashes));
        EXPECT_EQ(crashes, 0);
    }

    static inline std::unique_ptr<tessera::testing::ScratchDir> dir_;
    static inline std::string model_dir_, build_log_, lib_;
    static inline std::optional<SymbolBytes> plan_, weights_;
};

} // namespace

// Seeded single-byte flips inside the plan and inside the weights: the checksums written at
// build time catch each one when an instance is created.
TEST_F(LibraryFaults, FlippedPlanAndWeightBytesAreRefused) {
    const int n = fault_scale(24, 400);
    // The plan starts with its magic (8 bytes) and format version (4), which parse_plan checks
    // before the checksum, so that a plan of another version asks for a rebuild.
    auto plan_says = [](uint64_t at) -> std::string {
        return at < 8    ? "magic \"TSRPLAN\" is missing"
               : at < 12 ? "is not supported"
                         : "plan is corrupt";
    };
    std::vector<Damaged> libs = flips("plan", *plan_, n, 21, plan_says);
    for (Damaged& d : flips("weights", *weights_, n, 42,
                            [](uint64_t) -> std::string { return "weights are corrupt"; }))
        libs.push_back(std::move(d));
    refuse_all(libs, "flipped libraries");
}

// Truncations at seeded lengths (and at the edges: inside the ELF header, one byte short): the
// tools check the file's extents before dlopen maps pages the file does not have. Not given to
// the C API: a program's own dlopen of a truncated library dies of SIGBUS inside the loader
// (glibc maps the segments the file lacks), before any code of the library runs, and a cut
// that only loses the section headers at the end loads and runs correctly.
TEST_F(LibraryFaults, TruncatedLibrariesAreRefused) {
    std::mt19937_64 rng(7);
    std::vector<uint64_t> lengths = {1,
                                     sizeof(Elf64_Ehdr) / 2,
                                     sizeof(Elf64_Ehdr) + 8,
                                     plan_->offset + plan_->size / 2,
                                     weights_->offset + weights_->size / 2,
                                     lib_.size() - 1};
    for (int i = 0; i < fault_scale(12, 200); ++i)
        lengths.push_back(1 + rng() % (lib_.size() - 1));
    std::vector<Damaged> libs;
    for (size_t i = 0; i < lengths.size(); ++i) {
        const uint64_t n = lengths[i];
        libs.push_back(
            {"truncated to " + std::to_string(n) + " of " + std::to_string(lib_.size()) + " bytes",
             damaged("cut" + std::to_string(i) + ".so"), [n] { return lib_.substr(0, n); },
             n < sizeof(Elf64_Ehdr) ? "file too short" : "is truncated", "", "", false});
    }
    refuse_all(libs, "truncated libraries");
}

// Files that are no model library at all: empty, text, a real library without tessera symbols,
// a tessera library whose ELF header says aarch64 (or 32-bit).
TEST_F(LibraryFaults, FilesThatAreNoModelLibraryAreRefused) {
    std::vector<Damaged> libs;
    libs.push_back({"empty file", damaged("empty.so"), [] { return std::string(); }, "cannot load",
                    "dlopen: ", ""});
    libs.push_back({"text file", damaged("text.so"), [] { return std::string(200, 'x') + "\n"; },
                    "cannot load", "dlopen: ", ""});
    const std::string libm = loaded_libm();
    if (!libm.empty())
        libs.push_back({"a copy of " + libm, damaged("libm_copy.so"),
                        [libm] { return slurp(libm); }, "not a tessera model library",
                        "symbol: ", ""});
    libs.push_back({"ELF header for aarch64", damaged("aarch64.so"),
                    [] {
                        std::string b = lib_;
                        const uint16_t aarch64 = EM_AARCH64;
                        std::memcpy(&b[offsetof(Elf64_Ehdr, e_machine)], &aarch64, sizeof aarch64);
                        return b;
                    },
                    "built for another machine (aarch64", "dlopen: ", ""});
    libs.push_back({"ELF header for a 32-bit file", damaged("elf32.so"),
                    [] {
                        std::string b = lib_;
                        b[EI_CLASS] = ELFCLASS32;
                        return b;
                    },
                    "ELFCLASS32", "dlopen: ", ""});
    refuse_all(libs, "non-model files");
    EXPECT_FALSE(libm.empty()) << "this process has no libm.so.6 to copy";
}
