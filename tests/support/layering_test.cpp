// The layering of docs/DESIGN.md ("Layers"), checked against the code: every `#include
// "tessera/..."` in a layer's sources and public headers names a header of that layer or of a
// layer it links, directly or through others, as the `tessera_layer(NAME DIR DEPS...)` calls
// of CMakeLists.txt say; a relative include stays inside the layer's folder. So an upward
// include (the IR reaching into the graph, a schedule into the tuner) fails here, and the
// links CMake declares are the ones the includes need.
//
// Headers map to layers by folder: include/tessera/<d>/ is tessera_<d>'s, except
// include/tessera/backends/, whose cuda*.h are tessera_backend_cuda's and the others
// tessera_backend_llvm's. The driver (src/cli) and the tests may include anything.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

struct Layer {
    std::string dir;               ///< its sources, relative to the repository
    std::vector<std::string> deps; ///< the tessera_* targets it links
};

std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

/// The layers of a CMakeLists.txt text: its tessera_layer calls, with `${VAR}` arguments
/// expanded from the file's set(VAR ...) calls; only tessera_* dependencies are kept.
std::map<std::string, Layer> parse_layers(const std::string& cmake) {
    std::string text; // comments dropped
    std::istringstream lines(cmake);
    for (std::string line; std::getline(lines, line);)
        text += line.substr(0, line.find('#')) + "\n";
    auto words = [](const std::string& s) {
        std::istringstream in(s);
        std::vector<std::string> w;
        for (std::string x; in >> x;)
            w.push_back(x);
        return w;
    };
    std::map<std::string, std::set<std::string>> vars;
    const std::regex set_call(R"(\bset\(\s*(\w+)([^)]*)\))");
    for (std::sregex_iterator it(text.begin(), text.end(), set_call), end; it != end; ++it)
        for (const std::string& v : words((*it)[2]))
            vars[(*it)[1]].insert(v);
    std::map<std::string, Layer> layers;
    const std::regex layer_call(R"(\btessera_layer\(([^)]*)\))");
    for (std::sregex_iterator it(text.begin(), text.end(), layer_call), end; it != end; ++it) {
        const std::vector<std::string> args = words((*it)[1]);
        if (args.size() < 2 || args[0].rfind("tessera_", 0) != 0)
            continue; // the function's own definition
        Layer l{args[1], {}};
        for (size_t i = 2; i < args.size(); ++i) {
            std::vector<std::string> values = {args[i]};
            if (args[i].rfind("${", 0) == 0) {
                const std::set<std::string>& v = vars[args[i].substr(2, args[i].size() - 3)];
                values.assign(v.begin(), v.end());
            }
            for (const std::string& d : values)
                if (d.rfind("tessera_", 0) == 0)
                    l.deps.push_back(d);
        }
        layers[args[0]] = l;
    }
    return layers;
}

/// `name` and every layer it links, directly or through others.
std::set<std::string> reachable(const std::map<std::string, Layer>& layers,
                                const std::string& name) {
    std::set<std::string> out = {name};
    std::vector<std::string> todo = {name};
    while (!todo.empty()) {
        const std::string n = todo.back();
        todo.pop_back();
        auto it = layers.find(n);
        if (it == layers.end())
            continue; // an external target (tessera_xgboost, tessera_onnx_proto ...)
        for (const std::string& d : it->second.deps)
            if (out.insert(d).second)
                todo.push_back(d);
    }
    return out;
}

/// The layer of public header "tessera/<d>/<file>".
std::string header_layer(const std::string& header) {
    const size_t a = header.find('/') + 1, b = header.find('/', a);
    const std::string d = header.substr(a, b - a);
    if (d == "backends")
        return header.compare(b + 1, 4, "cuda") == 0 ? "tessera_backend_cuda"
                                                     : "tessera_backend_llvm";
    return "tessera_" + d;
}

/// The public headers of layer `name` (relative to the repository).
std::vector<std::string> public_headers(const fs::path& root, const std::string& name) {
    std::vector<std::string> out;
    const fs::path inc = root / "include" / "tessera";
    for (const auto& e : fs::recursive_directory_iterator(inc)) {
        if (!e.is_regular_file())
            continue;
        const std::string rel = fs::relative(e.path(), root / "include").generic_string();
        if (header_layer(rel) == name)
            out.push_back(fs::relative(e.path(), root).generic_string());
    }
    return out;
}

/// The violations in `file` (path relative to root, text `code`) of layer `name`: one line
/// each, "file:line: ...".
std::vector<std::string> violations(const std::map<std::string, Layer>& layers,
                                    const std::string& name, const std::string& file,
                                    const std::string& code) {
    const std::set<std::string> allowed = reachable(layers, name);
    const std::string dir = layers.at(name).dir;
    std::vector<std::string> out;
    const std::regex include(R"(^\s*#\s*include\s+"([^"]+)\")");
    std::istringstream lines(code);
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
        ++n;
        std::smatch m;
        if (!std::regex_search(line, m, include))
            continue;
        const std::string target = m[1];
        const std::string where = file + ":" + std::to_string(n) + ": includes \"" + target + "\"";
        if (target.rfind("tessera/", 0) == 0) {
            const std::string layer = header_layer(target);
            if (!allowed.count(layer))
                out.push_back(where + " of " + layer + ", which " + name + " does not link");
        } else if (target.find("..") != std::string::npos) {
            // A relative include must stay in the layer's folder (or its headers' folder).
            const std::string resolved =
                (fs::path(file).parent_path() / target).lexically_normal().generic_string();
            if (resolved.rfind(dir + "/", 0) != 0 && resolved.rfind("include/", 0) != 0)
                out.push_back(where + ", outside " + dir + "/");
        }
    }
    return out;
}

const fs::path kRoot = TESSERA_SOURCE_DIR;

TEST(Layering, EveryIncludeStaysWithinTheLayersItLinks) {
    const std::map<std::string, Layer> layers = parse_layers(read(kRoot / "CMakeLists.txt"));
    // The layers of docs/DESIGN.md, all declared.
    for (const char* l : {"tessera_support", "tessera_ir", "tessera_te", "tessera_graph",
                          "tessera_lower", "tessera_schedule", "tessera_cost_model",
                          "tessera_tuner", "tessera_backend_llvm", "tessera_runtime",
                          "tessera_compile"})
        EXPECT_TRUE(layers.count(l)) << l << " is not a tessera_layer of CMakeLists.txt";
    EXPECT_EQ(reachable(layers, "tessera_support").size(), 1u) << "support depends on nothing";
    EXPECT_FALSE(reachable(layers, "tessera_ir").count("tessera_graph"));
    std::vector<std::string> bad;
    int files = 0;
    for (const auto& [name, layer] : layers) {
        std::vector<std::string> sources = public_headers(kRoot, name);
        if (fs::exists(kRoot / layer.dir))
            for (const auto& e : fs::recursive_directory_iterator(kRoot / layer.dir))
                if (e.is_regular_file())
                    sources.push_back(fs::relative(e.path(), kRoot).generic_string());
        for (const std::string& f : sources) {
            const std::string ext = fs::path(f).extension().string();
            if (ext != ".cpp" && ext != ".h" && ext != ".def" && ext != ".cu")
                continue;
            ++files;
            for (const std::string& v : violations(layers, name, f, read(kRoot / f)))
                bad.push_back(v);
        }
    }
    EXPECT_GT(files, 300);
    std::string all;
    for (const std::string& v : bad)
        all += v + "\n";
    EXPECT_TRUE(bad.empty()) << all;
}

TEST(Layering, TheCheckSeesUpwardAndEscapingIncludes) {
    const std::map<std::string, Layer> layers = parse_layers(R"(
        function(tessera_layer name dir) # the definition is no layer
        endfunction()
        set(EXTRA tessera_c)
        tessera_layer(tessera_a src/a)
        tessera_layer(tessera_b src/b tessera_a Threads::Threads)
        tessera_layer(tessera_c src/c tessera_b)   # tessera_layer(tessera_x no/such)
        tessera_layer(tessera_d src/d
                      ${EXTRA}))");
    ASSERT_EQ(layers.size(), 4u);
    EXPECT_EQ(layers.at("tessera_b").deps, (std::vector<std::string>{"tessera_a"}));
    EXPECT_EQ(layers.at("tessera_d").deps, (std::vector<std::string>{"tessera_c"}));
    EXPECT_EQ(reachable(layers, "tessera_d"),
              (std::set<std::string>{"tessera_a", "tessera_b", "tessera_c", "tessera_d"}));
    const std::string ok = "#include \"tessera/a/x.h\"\n#include \"../b/y.h\"\n";
    EXPECT_TRUE(violations(layers, "tessera_c", "src/c/k/f.cpp", ok).empty());
    const std::vector<std::string> v = violations(
        layers, "tessera_b", "src/b/f.cpp",
        "#include <vector>\n#include \"tessera/c/z.h\"\n  #  include \"../a/w.h\"\n");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0], "src/b/f.cpp:2: includes \"tessera/c/z.h\" of tessera_c, which tessera_b "
                    "does not link");
    EXPECT_EQ(v[1], "src/b/f.cpp:3: includes \"../a/w.h\", outside src/b/");
    EXPECT_EQ(header_layer("tessera/backends/cuda_driver.h"), "tessera_backend_cuda");
    EXPECT_EQ(header_layer("tessera/backends/host.h"), "tessera_backend_llvm");
}

} // namespace
} // namespace tessera::testing
