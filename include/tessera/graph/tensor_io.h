// Tensor files: NumPy .npy (read and write) and ONNX TensorProto .pb (read), the formats of
// model test data sets and of `tessera run` inputs and outputs.
#pragma once

#include <string>

#include "tessera/graph/tensor_data.h"

namespace tessera::graph {

/// Reads a .npy file: format versions 1 to 3, C order, little-endian, of a dtype of the table
/// ('<f4', '|b1', ...; a void descr gives the first dtype that has it, see npy_as). Throws
/// UserError naming the file when it cannot be read, is not .npy, or holds another dtype,
/// Fortran order or the wrong number of bytes.
TensorData read_npy(const std::string& path);
/// Parses .npy bytes held in memory; `origin` names them in messages.
TensorData parse_npy(const std::string& bytes, const std::string& origin);

/// Writes t as a version-1 .npy file (C order, little-endian). Throws UserError naming the
/// file when it cannot be written.
void write_npy(const std::string& path, const TensorData& t);
/// The .npy bytes of t.
std::string npy_bytes(const TensorData& t);

/// Reads a serialized ONNX TensorProto (.pb), as found in ONNX test data sets.
TensorData read_tensor_pb(const std::string& path);

/// read_npy for a name ending in ".npy", read_tensor_pb for ".pb"; anything else is an error.
TensorData read_tensor_file(const std::string& path);

/// t, read from a .npy file, as dtype `want` when both have the same .npy descr: numpy's void
/// descrs ('<V2', '|V1') stand for several dtypes (bf16, the narrow types), and only the
/// reader's context (the model input it feeds) says which. Otherwise t unchanged.
TensorData npy_as(TensorData t, DType want);

} // namespace tessera::graph
