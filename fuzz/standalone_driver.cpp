// A small stand-in for libFuzzer's driver, for compilers without -fsanitize=fuzzer: runs
// LLVMFuzzerTestOneInput on every seed file, then on seeded random mutations of the seeds
// (bit flips, byte sets, inserts, deletes, truncations, chunk copies and splices between
// seeds) until -max_total_time seconds or -runs inputs have passed. Accepts the libFuzzer
// flags the ctest entry and scripts/fuzz_import.sh use: -max_total_time=S, -runs=N, -seed=N,
// -max_len=N; other arguments are seed files or directories of them. An input that throws is
// written to crash-<n>.bin in the current directory and the driver exits 1.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/support/rng.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

bool flag_value(const std::string& arg, const std::string& name, long long* out) {
    const std::string prefix = "-" + name + "=";
    if (arg.compare(0, prefix.size(), prefix) != 0)
        return false;
    *out = std::atoll(arg.c_str() + prefix.size());
    return true;
}

/// One to four random edits of `s` (kept within max_len).
std::string mutate(std::string s, const std::vector<std::string>& seeds, tessera::Rng& rng,
                   size_t max_len) {
    const int edits = static_cast<int>(rng.uniform_int(1, 4));
    for (int e = 0; e < edits; ++e) {
        const int64_t n = static_cast<int64_t>(s.size());
        switch (rng.uniform_int(0, 6)) {
        case 0: // flip a bit
            if (n > 0)
                s[rng.uniform_int(0, n - 1)] ^= static_cast<char>(1 << rng.uniform_int(0, 7));
            break;
        case 1: { // set a byte to an interesting value
            static const unsigned char kBytes[] = {0, 1, 0x7f, 0x80, 0xff, 0x08, 0x10, 0x12};
            if (n > 0)
                s[rng.uniform_int(0, n - 1)] =
                    static_cast<char>(kBytes[rng.uniform_int(0, sizeof(kBytes) - 1)]);
            break;
        }
        case 2: // insert random bytes
            s.insert(static_cast<size_t>(rng.uniform_int(0, n)),
                     std::string(static_cast<size_t>(rng.uniform_int(1, 8)),
                                 static_cast<char>(rng.uniform_int(0, 255))));
            break;
        case 3: // delete a range
            if (n > 1) {
                const int64_t at = rng.uniform_int(0, n - 1);
                s.erase(static_cast<size_t>(at),
                        static_cast<size_t>(rng.uniform_int(1, std::min<int64_t>(64, n - at))));
            }
            break;
        case 4: // truncate
            if (n > 1)
                s.resize(static_cast<size_t>(rng.uniform_int(1, n - 1)));
            break;
        case 5: // copy a chunk within the input
            if (n > 2) {
                const int64_t from = rng.uniform_int(0, n - 2);
                const int64_t len = rng.uniform_int(1, std::min<int64_t>(128, n - from));
                const std::string chunk =
                    s.substr(static_cast<size_t>(from), static_cast<size_t>(len));
                s.insert(static_cast<size_t>(rng.uniform_int(0, n)), chunk);
            }
            break;
        default: { // splice with another seed
            const std::string& other =
                seeds[static_cast<size_t>(rng.uniform_int(0, seeds.size() - 1))];
            if (!other.empty() && n > 0) {
                const size_t cut = static_cast<size_t>(rng.uniform_int(0, n));
                const size_t from =
                    static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(other.size()) - 1));
                s = s.substr(0, cut) + other.substr(from);
            }
            break;
        }
        }
    }
    if (s.size() > max_len)
        s.resize(max_len);
    return s;
}

int run_one(const std::string& input, long long index) {
    try {
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "fuzz input " << index << " threw: " << e.what() << "\n";
    } catch (...) {
        std::cerr << "fuzz input " << index << " threw a non-standard exception\n";
    }
    const std::string name = "crash-" + std::to_string(index) + ".bin";
    std::ofstream(name, std::ios::binary) << input;
    std::cerr << "input written to " << name << "\n";
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    long long max_time = 20, runs = -1, seed = 1, max_len = 1 << 20;
    std::vector<std::string> seeds;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        long long v = 0;
        if (flag_value(arg, "max_total_time", &v))
            max_time = v;
        else if (flag_value(arg, "runs", &v))
            runs = v;
        else if (flag_value(arg, "seed", &v))
            seed = v;
        else if (flag_value(arg, "max_len", &v))
            max_len = v;
        else if (!arg.empty() && arg[0] == '-')
            std::cerr << "ignoring unknown flag " << arg << "\n";
        else if (fs::is_directory(arg)) {
            std::vector<fs::path> files;
            for (const auto& entry : fs::directory_iterator(arg))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
            std::sort(files.begin(), files.end()); // deterministic order
            for (const fs::path& p : files)
                seeds.push_back(read_file(p));
        } else if (fs::is_regular_file(arg)) {
            seeds.push_back(read_file(arg));
        } else {
            std::cerr << "error: no seed file or directory '" << arg << "'\n";
            return 1;
        }
    }
    if (seeds.empty())
        seeds.push_back(std::string());
    long long count = 0;
    for (const std::string& s : seeds)
        if (run_one(s, count++))
            return 1;
    tessera::Rng rng(static_cast<uint64_t>(seed));
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    while ((runs < 0 || count < runs) && elapsed() < static_cast<double>(max_time)) {
        const std::string& base =
            seeds[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(seeds.size()) - 1))];
        if (run_one(mutate(base, seeds, rng, static_cast<size_t>(max_len)), count++))
            return 1;
    }
    std::cout << "fuzz: " << count << " inputs in " << elapsed() << " s, no failure (seed " << seed
              << ")\n";
    return 0;
}
