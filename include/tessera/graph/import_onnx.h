// ONNX import: a .onnx ModelProto to a shape-inferred graph in canonical form (see graph.h).
//
// Supported: IR versions 3 to 14, ai.onnx opsets 1 to 28, the operators of ops.def with every
// attribute the opsets define for them that their table entry accepts (src/graph/ops/: each
// entry lists its attributes per opset and refuses the rest; opset differences such as axes
// as inputs from opset 13 or Clip bounds as inputs from opset 11 are normalized to one
// canonical form), initializers from raw_data, typed fields or external data files beside the model,
// Constant nodes (which become constant values). Every value gets a static shape: a symbolic
// or missing input dim must be fixed through ImportOptions::input_shapes.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "tessera/graph/graph.h"

namespace tessera::graph {

struct ImportOptions {
    /// Static shapes for graph inputs, by name (e.g. {"input", {1, 3, 224, 224}}, as given by
    /// `--input-shape input=1x3x224x224`). Required for inputs with symbolic or unknown dims;
    /// must agree with the model's static dims; naming an unknown input is an error.
    std::map<std::string, Shape> input_shapes;
    /// Values for graph inputs, by name (`--bind NAME=FILE.npy`): each such input becomes a
    /// constant of that value and is no longer an input of the graph, so inputs that set
    /// shapes (a Reshape's shape, a Resize's sizes) can be folded. The dtype must be the
    /// input's, the shape must agree with its static dims; naming an unknown input, or an
    /// input also given in input_shapes, is an error.
    std::map<std::string, TensorData> bound_inputs;
};

/// Reads and imports the model at `path`. Throws UserError naming the file on an unreadable
/// or corrupted file and on an unsupported IR version or opset, and naming the node (with its
/// op and the opset) on an unsupported op or attribute, an undefined input (a missing
/// initializer), or a rank, shape or dtype mismatch found by shape inference.
Graph import_onnx(const std::string& path, const ImportOptions& options = {});

/// Imports a serialized ModelProto held in memory; `origin` names it in messages and external
/// data is not available.
Graph import_onnx_bytes(const std::string& bytes, const std::string& origin,
                        const ImportOptions& options = {});

/// Parses "name=1x3x224x224" (the --input-shape syntax; "name=" alone is a scalar). Throws
/// UserError quoting the text when malformed.
std::pair<std::string, Shape> parse_input_shape(const std::string& spec);

} // namespace tessera::graph
