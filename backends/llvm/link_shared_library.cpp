// Linking object files into a shared library by running a linker: GNU ld for objects of this
// host's machine, ld.lld for others (or the C compiler driver when neither can be found).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <elf.h>
#include <unistd.h>

#include "run_tool.h"
#include "tessera/backends/llvm.h"
#include "tessera/support/error.h"
#include "tessera/support/find_in_path.h"

namespace tessera::backend {

namespace {

/// The ELF machine (e_machine) of the object at `path`, or EM_NONE when it cannot be read.
int elf_machine(const std::string& path) {
    Elf64_Ehdr header{};
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(&header), sizeof header) ||
        std::string(reinterpret_cast<const char*>(header.e_ident), SELFMAG) != ELFMAG)
        return EM_NONE;
    return header.e_machine;
}

constexpr int host_elf_machine() {
#if defined(__x86_64__)
    return EM_X86_64;
#elif defined(__aarch64__)
    return EM_AARCH64;
#else
    return EM_NONE;
#endif
}

/// The linker's command up to its inputs. GNU ld (binutils, beside every C compiler) links a
/// one-kernel library of the tuner in 7 ms where ld.lld takes 28 (it loads libLLVM first),
/// a fifth of a candidate's build; it only knows the host's machine, ld.lld every triple.
std::vector<std::string> linker_command(const std::vector<std::string>& objects) {
    static const bool gnu_ld = !find_in_path("ld.bfd").empty();
    if (gnu_ld && host_elf_machine() != EM_NONE && elf_machine(objects[0]) == host_elf_machine())
        return {"ld.bfd", "-shared", "--as-needed"};
#ifdef TESSERA_LLD_PATH
    if (access(TESSERA_LLD_PATH, X_OK) == 0)
        return {TESSERA_LLD_PATH, "-shared", "--as-needed"};
#endif
    return {"cc", "-shared"};
}

} // namespace

void link_shared_library(const std::vector<std::string>& objects, const std::string& so_path) {
    if (objects.empty())
        throw UserError() << "no object files to link into '" << so_path << "'";
    std::vector<std::string> argv = linker_command(objects);
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
