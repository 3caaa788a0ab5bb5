#include "tessera/tuner/measure_error.h"

namespace tessera::tune {

const char* to_string(MeasureError e) {
    switch (e) {
    case MeasureError::Ok:
        return "ok";
    case MeasureError::Instantiation:
        return "instantiation";
    case MeasureError::CompileHost:
        return "compile_host";
    case MeasureError::CompileDevice:
        return "compile_device";
    case MeasureError::RuntimeDevice:
        return "runtime_device";
    case MeasureError::WrongAnswer:
        return "wrong_answer";
    case MeasureError::BuildTimeout:
        return "build_timeout";
    case MeasureError::RunTimeout:
        return "run_timeout";
    case MeasureError::Unknown:
        return "unknown";
    }
    return "invalid";
}

std::optional<MeasureError> parse_measure_error(const std::string& name) {
    for (int i = int(MeasureError::Ok); i <= int(MeasureError::Unknown); ++i)
        if (name == to_string(MeasureError(i)))
            return MeasureError(i);
    return std::nullopt;
}

} // namespace tessera::tune
