// Cost models by name, as the command line chooses them.
#include "tessera/cost_model/cost_model.h"
#include "tessera/support/error.h"

namespace tessera::cost {

std::unique_ptr<CostModel> make_model(const std::string& name, uint64_t seed) {
    if (name == "random")
        return make_random_model(seed);
    if (name == "xgboost") {
        XGBoostOptions xo;
        xo.seed = seed;
        return make_xgboost_model(xo);
    }
    throw UserError() << "unknown cost model '" << name << "' (xgboost or random)";
}

} // namespace tessera::cost
