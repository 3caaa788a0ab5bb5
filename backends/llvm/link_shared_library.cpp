// Linking object files into a shared library by running ld.lld (or the C compiler driver).
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "run_tool.h"
#include "tessera/backends/llvm.h"
#include "tessera/support/error.h"

namespace tessera::backend {

void link_shared_library(const std::vector<std::string>& objects, const std::string& so_path) {
    if (objects.empty())
        throw UserError() << "no object files to link into '" << so_path << "'";
    std::vector<std::string> argv;
#ifdef TESSERA_LLD_PATH
    if (access(TESSERA_LLD_PATH, X_OK) == 0)
        argv = {TESSERA_LLD_PATH, "-shared", "--as-needed"};
#endif
    if (argv.empty())
        argv = {"cc", "-shared"};
    argv.push_back("-o");
    argv.push_back(so_path);
    argv.insert(argv.end(), objects.begin(), objects.end());

    // The linker's output goes beside the library (the tuner's work folder, which is swept when
    // a killed tuner leaves it), never into /tmp where a killed link would leave it for good.
    const std::string log = so_path + ".link.log";
    int rc = run_tool_logged(argv, log);
    const std::string output = one_line(read_text_file(log));
    std::remove(log.c_str());
    if (rc != 0) {
        throw UserError() << "linking '" << so_path << "' with " << argv[0] << " failed"
                          << (rc < 0 ? " to start" : " (exit " + std::to_string(rc) + ")")
                          << (output.empty() ? "" : ": ") << output;
    }
}

} // namespace tessera::backend
