#include "common/op_runner.h"

#include <cstdint>
#include <limits>

#include "common/test_util.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/lower_default.h"
#include "tessera/support/error.h"
#include "tessera/support/half.h"

namespace tessera::testing {

Executor interpreter_executor() {
    return [](const ir::LoweredFunc& f, std::vector<void*>& args) { ir::interpret(f, args); };
}

std::vector<std::vector<float>> random_inputs(const te::Compute& c, uint64_t seed, float lo,
                                              float hi) {
    std::vector<std::vector<float>> data;
    for (size_t i = 0; i < c.inputs.size(); ++i)
        data.push_back(random_floats(static_cast<size_t>(te::num_elements(c.inputs[i].shape())),
                                     seed + i, lo, hi));
    return data;
}

std::vector<std::vector<float>> run_lowered(const ir::LoweredFunc& f,
                                            const std::vector<std::vector<float>>& inputs,
                                            const Executor& exec) {
    TESSERA_CHECK(inputs.size() <= f.params.size())
        << f.name << ": " << inputs.size() << " inputs for " << f.params.size() << " params";
    ir::verify(f);
    std::vector<std::vector<float>> data(inputs.begin(), inputs.end());
    for (size_t i = 0; i < f.params.size(); ++i) {
        const ir::Buffer& b = f.params[i];
        TESSERA_CHECK(b.dtype() == ir::DataType::f32() || b.dtype() == ir::DataType::f16())
            << f.name << ": param '" << b.name() << "' of type " << b.dtype()
            << " (f32 or f16 only)";
        size_t n = static_cast<size_t>(b->num_elements());
        if (i < inputs.size())
            TESSERA_CHECK(data[i].size() == n) << f.name << ": input '" << b.name() << "' has "
                                               << data[i].size() << " elements, needs " << n;
        else
            data.emplace_back(n, std::numeric_limits<float>::quiet_NaN());
    }
    // f16 params hold the values rounded to f16 (what the inputs then mean), converted back
    // after the call.
    std::vector<std::vector<uint16_t>> halves(data.size());
    std::vector<void*> args;
    for (size_t i = 0; i < data.size(); ++i) {
        if (f.params[i].dtype() == ir::DataType::f16()) {
            for (float v : data[i])
                halves[i].push_back(f32_to_f16_bits(v));
            args.push_back(halves[i].data());
        } else {
            args.push_back(data[i].data());
        }
    }
    exec(f, args);
    for (size_t i = 0; i < data.size(); ++i)
        for (size_t j = 0; j < halves[i].size(); ++j)
            data[i][j] = f16_bits_to_f32(halves[i][j]);
    return std::vector<std::vector<float>>(data.begin() + static_cast<long>(inputs.size()),
                                           data.end());
}

std::vector<std::vector<float>> run_compute(const te::Compute& c,
                                            const std::vector<std::vector<float>>& inputs,
                                            const Executor& exec) {
    return run_lowered(lower::lower_default(c, "kernel"), inputs, exec);
}

} // namespace tessera::testing
