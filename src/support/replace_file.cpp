// Writing an output file all or nothing (replace_file.h).
#include "tessera/support/replace_file.h"

#include <filesystem>
#include <fstream>

#include "tessera/support/error.h"

namespace tessera {

namespace fs = std::filesystem;

void check_replaceable(const std::string& path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st) || fs::is_regular_file(st))
        return;
    throw UserError() << "cannot write '" << path << "': it is "
                      << (fs::is_directory(st) ? "a directory" : "not a regular file");
}

void replace_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
    check_replaceable(path);
    const std::string tmp = path + ".partial";
    std::error_code ec;
    try {
        std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
        if (!file)
            throw UserError() << "cannot write '" << path << "'";
        write(file);
        file.close();
        if (!file)
            throw UserError() << "cannot write '" << path << "' (no space left, or an I/O error)";
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
    fs::rename(tmp, path, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw UserError() << "cannot write '" << path << "' (" << ec.message() << ")";
    }
}

} // namespace tessera
