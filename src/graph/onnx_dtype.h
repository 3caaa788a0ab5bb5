// ONNX element type codes (TensorProto::DataType) and tessera's dtypes, without protobuf: the
// importer, tensor conversion and Cast's import canonicalization share them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/graph/tensor_data.h"

namespace tessera::graph::detail {

/// Our dtype for an ONNX TensorProto::DataType code, or nullopt when unsupported.
std::optional<DType> dtype_from_onnx(int32_t elem_type);
/// The ONNX name of an element type code ("float16"), for messages.
std::string onnx_type_name(int32_t elem_type);

} // namespace tessera::graph::detail
