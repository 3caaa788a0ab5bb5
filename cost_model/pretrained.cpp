// The built-in pretrained cost model, from the arrays cmake/embed_files.cmake generates.
#include "tessera/cost_model/pretrained.h"

#include <fstream>
#include <iterator>

#include "tessera/support/error.h"

namespace tessera::cost {

namespace embedded {
extern const unsigned char cpu_xgboost_blob[];
extern const unsigned long cpu_xgboost_blob_size;
extern const unsigned char cpu_xgboost_info[];
extern const unsigned long cpu_xgboost_info_size;
} // namespace embedded

const std::vector<uint8_t>& builtin_pretrained_blob() {
    static const std::vector<uint8_t> blob(
        embedded::cpu_xgboost_blob, embedded::cpu_xgboost_blob + embedded::cpu_xgboost_blob_size);
    return blob;
}

const std::string& builtin_pretrained_info() {
    static const std::string info(
        reinterpret_cast<const char*>(embedded::cpu_xgboost_info),
        embedded::cpu_xgboost_info_size);
    return info;
}

std::vector<uint8_t> pretrained_blob(const std::string& choice) {
    if (choice == "builtin")
        return builtin_pretrained_blob();
    if (choice == "none")
        return {};
    std::ifstream in(choice, std::ios::binary);
    if (!in)
        throw UserError() << "--pretrained " << choice
                          << ": no such file (expected builtin, none or a model blob)";
    std::vector<uint8_t> blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        throw UserError() << "--pretrained " << choice << ": cannot be read";
    return blob;
}

} // namespace tessera::cost
