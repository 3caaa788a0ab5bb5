// Linking object files into a shared library by running ld.lld (or the C compiler driver).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tessera/backends/llvm.h"
#include "tessera/support/error.h"

extern char** environ;

namespace tessera::backend {

namespace {

/// Runs argv[0] (searched in PATH) with its output in `log`; returns the exit status, or -1
/// when it could not be started.
int run(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

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

    char log_template[] = "/tmp/tessera_link_XXXXXX";
    int fd = mkstemp(log_template);
    if (fd < 0)
        throw UserError() << "cannot create a temporary file: " << std::strerror(errno);
    close(fd);
    const std::string log = log_template;
    int rc = run(argv, log);
    std::string output = read_file(log);
    std::remove(log.c_str());
    if (rc != 0) {
        throw UserError() << "linking '" << so_path << "' with " << argv[0] << " failed"
                          << (rc < 0 ? " to start" : " (exit " + std::to_string(rc) + ")")
                          << (output.empty() ? "" : ": ") << output;
    }
}

} // namespace tessera::backend
