// What every cost model shares: the defaults of CostModel's optional abilities.
#include "tessera/cost_model/cost_model.h"

#include "tessera/support/error.h"

namespace tessera::cost {

void CostModel::set_prior(const std::vector<uint8_t>&) {
    throw UserError() << "the " << name() << " cost model cannot start from a pretrained model";
}

} // namespace tessera::cost
