#include "tessera/support/target.h"

#include <sstream>
#include <vector>

#include "tessera/support/error.h"

namespace tessera {

namespace {

std::vector<std::string> words_of(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string w; in >> w;)
        words.push_back(w);
    return words;
}

/// Each comma-separated entry starts with + or - and names something.
bool is_feature_list(const std::string& f) {
    std::istringstream in(f);
    for (std::string e; std::getline(in, e, ',');)
        if (e.size() < 2 || (e[0] != '+' && e[0] != '-'))
            return false;
    return !f.empty() && f.back() != ',';
}

} // namespace

bool is_cuda_arch(const std::string& a) {
    return a.size() >= 4 && a.compare(0, 3, "sm_") == 0 &&
           a.find_first_not_of("0123456789", 3) == std::string::npos;
}

const char* to_string(Target::Kind kind) { return kind == Target::Kind::Cuda ? "cuda" : "llvm"; }

std::string Target::str() const {
    std::string s = to_string(kind);
    auto add = [&](const char* opt, const std::string& v) {
        if (!v.empty())
            s += std::string(" -") + opt + "=" + v;
    };
    add("mtriple", triple);
    add("mcpu", cpu);
    add("mattr", features);
    add("num-cores", num_cores > 0 ? std::to_string(num_cores) : "");
    add("arch", arch);
    return s;
}

bool Target::operator==(const Target& o) const {
    return kind == o.kind && triple == o.triple && cpu == o.cpu && features == o.features &&
           num_cores == o.num_cores && arch == o.arch;
}

Target parse_target(const std::string& text) {
    const std::vector<std::string> words = words_of(text);
    auto bad = [&](const std::string& why) {
        return UserError() << "target '" << text << "': " << why;
    };
    if (words.empty())
        throw bad("empty (expected llvm or cuda, then options)");
    Target t;
    if (words[0] == "llvm" || words[0] == "cpu")
        t.kind = Target::Kind::Llvm;
    else if (words[0] == "cuda")
        t.kind = Target::Kind::Cuda;
    else
        throw bad("unknown kind '" + words[0] + "' (expected llvm or cuda)");

    for (size_t i = 1; i < words.size(); ++i) {
        std::string w = words[i];
        if (w.rfind("--", 0) == 0)
            w.erase(0, 1);
        if (w.size() < 2 || w[0] != '-')
            throw bad("'" + words[i] + "' is not an option (-mcpu=NAME, ...)");
        std::string name = w.substr(1), value;
        if (const size_t eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
        } else if (i + 1 < words.size() && words[i + 1][0] != '-') {
            value = words[++i];
        }
        if (value.empty())
            throw bad("option -" + name + " needs a value");
        const bool llvm_option =
            name == "mtriple" || name == "mcpu" || name == "mattr" || name == "num-cores";
        if (!llvm_option && name != "arch")
            throw bad("unknown option -" + name +
                      " (llvm takes -mtriple, -mcpu, -mattr, -num-cores; cuda takes -arch)");
        if (llvm_option != t.is_llvm())
            throw bad("option -" + name + " does not apply to " + to_string(t.kind));
        if (name == "mtriple") {
            t.triple = value;
        } else if (name == "mcpu") {
            t.cpu = value;
        } else if (name == "mattr") {
            if (!is_feature_list(value))
                throw bad("-mattr=" + value + ": entries are +name or -name, comma-separated");
            t.features = value;
        } else if (name == "num-cores") {
            int n = 0;
            try {
                size_t used = 0;
                n = std::stoi(value, &used);
                if (used != value.size())
                    n = 0;
            } catch (const std::exception&) {
                n = 0;
            }
            if (n < 1 || n > 4096)
                throw bad("-num-cores=" + value + ": expected 1..4096");
            t.num_cores = n;
        } else {
            if (!is_cuda_arch(value))
                throw bad("-arch=" + value + ": expected sm_<digits> (e.g. sm_90)");
            t.arch = value;
        }
    }
    return t;
}

} // namespace tessera
