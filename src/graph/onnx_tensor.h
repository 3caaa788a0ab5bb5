// Conversion of ONNX TensorProto data to TensorData (initializers, Constant values, .pb test
// files). Internal to the graph layer: the only place besides the importer that sees protobuf.
#pragma once

#include <optional>
#include <string>

#include "onnx/onnx.pb.h"
#include "onnx_dtype.h"
#include "tessera/graph/tensor_data.h"

namespace tessera::graph::detail {

/// The tensor's data, from raw_data or the typed fields, or from external data in a file
/// relative to `base_dir` (empty: external data is an error). `what` names the tensor in
/// messages ("initializer 'w'"). Throws UserError on an unsupported element type, a size
/// mismatch, segments or unreadable external data.
TensorData tensor_from_proto(const onnx::TensorProto& t, const std::string& what,
                             const std::string& base_dir);

} // namespace tessera::graph::detail
