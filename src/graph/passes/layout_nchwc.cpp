// The layout pass: CPU 2-D convolutions, pools and the elementwise ops between them move
// to the blocked channel layout NCHW[x]c (see passes.h for the rules and ops/blocked_layout.h
// for the data layout).
//
// One sweep in topological order. Each rewritten node is replaced by its blocked twin followed
// by a LayoutFromBlocked that redefines the original NCHW value, so every reader that is not
// rewritten still sees NCHW data; a reader that is rewritten asks for the blocked twin instead,
// which skips that conversion (it dies and is removed at the end). Blocked twins of values
// with no blocked producer are made by one LayoutToBlocked per value (constants are converted
// at compile time instead).
#include <algorithm>
#include <map>
#include <sstream>

#include "../ops/blocked_layout.h"
#include "../ops/quantized_conv.h"
#include "rewrite.h"

namespace tessera::graph {

using namespace detail;

namespace {

// Unary elementwise ops kept blocked: those their op table entry marks as keeping finite
// values finite (OpDef::keeps_finite). Padding channels hold finite values (0 after a conv);
// such ops keep them finite, so the zero weights of padded input channels cancel them. Ops
// that can make inf/NaN out of 0 (Log, Reciprocal, Div, Pow, Sqrt) are left in NCHW.
bool blockable_unary(Op op) { return op_def(op).keeps_finite; }
// Per-tensor QuantizeLinear and DequantizeLinear (one scale, one zero point) map each element
// alone, as the unary ops do: a quantized model's Q -> DQ pairs between convs stay blocked.
// Padding channels stay finite: 0 quantizes to the zero point, which dequantizes to 0.
bool blockable_quantize(Op op) { return op == Op::QuantizeLinear || op == Op::DequantizeLinear; }
bool blockable_binary(Op op) {
    return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Max || op == Op::Min;
}

// Input channels per block of an 8-bit conv's words when they fill whole blocks of it: 64
// bytes, one row of an AMX tile (16 VNNI words of four channels), contiguous per pixel for
// the matrix-tile kernels; the vector kernels sum over the block's words as over smaller ones.
constexpr int64_t kQConvWordsBlock = 64;

// A grouped conv's groups narrower than a block become one group per block with zero weights
// between its groups, when that multiplies its products by at most this (RegNet's groups of 8
// in blocks of 16: twice; groups of 2 in blocks of 16 stay NCHW).
constexpr int64_t kMaxGroupWidening = 4;

class LayoutRewriter {
  public:
    LayoutRewriter(Graph& g, int64_t block) : g_(g), block_(block) {}

    PassResult run() {
        PassResult r = begin_pass("layout", g_);
        for (NodeId id : g_.topological_order()) {
            if (!g_.is_live(id))
                continue; // a later node of a pattern rewritten whole (a channel shuffle)
            const Op op = g_.node(id).op;
            if (op == Op::Conv)
                convs_ += rewrite_conv(id);
            else if (op == Op::QConv)
                convs_ += rewrite_qconv(id);
            else if (op == Op::MaxPool || op == Op::AveragePool)
                pools_ += rewrite_pool(id);
            else if (op == Op::GlobalAveragePool)
                pools_ += rewrite_global_average_pool(id);
            else if (op == Op::ReduceMean)
                pools_ += rewrite_spatial_mean(id);
            else if (blockable_unary(op) || blockable_binary(op) || blockable_quantize(op))
                elementwise_ += rewrite_elementwise(id);
            else if (op == Op::Concat)
                concats_ += rewrite_concat(id);
            else if (op == Op::Slice)
                slices_ += rewrite_slice(id);
            else if (op == Op::Reshape)
                shuffles_ += rewrite_channel_shuffle(id);
        }
        cancel_pairs();
        g_.remove_dead_nodes();
        int to = 0, from = 0;
        for (NodeId id : g_.node_ids()) {
            to += g_.node(id).op == Op::LayoutToBlocked;
            from += g_.node(id).op == Op::LayoutFromBlocked;
        }
        r.changes = convs_ + pools_ + elementwise_ + concats_ + slices_ + shuffles_ + cancelled_;
        std::ostringstream os;
        os << convs_ << " convs, " << pools_ << " pools, " << concats_ << " concats, " << slices_
           << " slices, " << shuffles_ << " channel shuffles and " << elementwise_
           << " elementwise ops to NCHW" << block_ << "c, " << to << " to / " << from
           << " from conversions";
        if (cancelled_)
            os << ", " << cancelled_ << " conversion pairs cancelled";
        return end_pass(r, g_, os.str());
    }

  private:
    // The blocked twin of NCHW value v: known, the input of the LayoutFromBlocked defining v,
    // a compile-time re-laid-out constant, or a new LayoutToBlocked.
    ValueId blocked(ValueId v) {
        auto it = twin_.find(v);
        if (it != twin_.end())
            return it->second;
        ValueId b;
        if (const Node* from = from_node(v)) {
            b = from->input(0);
        } else if (g_.value(v).is_constant()) {
            const std::string name = g_.value(v).name + "_nchwc";
            b = g_.add_constant(name, to_blocked(*g_.value(v).constant, block_));
        } else {
            const Value val = g_.value(v);
            b = g_.add_value(val.name + "_nchwc", val.dtype, blocked_shape(val.shape));
            g_.add_node(Op::LayoutToBlocked, {v}, {b}, {{"block", Attribute::of_int(block_)}});
        }
        twin_[v] = b;
        return b;
    }

    // NCHW value v (an image of C < x channels) as one block of all its channels,
    // [N, 1, H, W, C], or of `c` >= C channels (the padding ones 0): one LayoutToBlocked per
    // value.
    ValueId single_block(ValueId v, int64_t c = 0) {
        auto it = single_block_.find(v);
        if (it != single_block_.end())
            return it->second;
        const Value val = g_.value(v);
        c = std::max(c, val.shape[1]);
        const ValueId b = g_.add_value(val.name + "_nchw" + std::to_string(c) + "c", val.dtype,
                                       {val.shape[0], 1, val.shape[2], val.shape[3], c});
        g_.add_node(Op::LayoutToBlocked, {v}, {b}, {{"block", Attribute::of_int(c)}});
        single_block_[v] = b;
        return b;
    }

    // The LayoutFromBlocked node of this block size defining v, or nullptr.
    const Node* from_node(ValueId v) const {
        const Node* n = producer_op(g_, v, Op::LayoutFromBlocked);
        return n && n->attr_int("block", 0) == block_ ? n : nullptr;
    }
    bool has_twin(ValueId v) const { return twin_.count(v) || from_node(v); }

    Shape blocked_shape(const Shape& s) const {
        return {s[0], channel_blocks(s[1], block_), s[2], s[3], block_};
    }

    // Defines NCHW value y (typed, without a producer) as LayoutFromBlocked of a new node
    // `op` (named `name`) on blocked operands, whose output is y's blocked twin.
    void define_blocked(ValueId y, Op op, std::vector<ValueId> inputs, Attributes attrs,
                        const std::string& name) {
        const Value yv = g_.value(y);
        const ValueId yb = g_.add_value(yv.name + "_nchwc", yv.dtype, blocked_shape(yv.shape));
        g_.add_node(op, std::move(inputs), {yb}, std::move(attrs), name);
        g_.add_node(
            Op::LayoutFromBlocked, {yb}, {y},
            {{"block", Attribute::of_int(block_)}, {"channels", Attribute::of_int(yv.shape[1])}});
        twin_[y] = yb;
    }

    // Replaces node `id` (single output y, NCHW) by `op` on blocked operands producing y's
    // blocked twin, and redefines y as LayoutFromBlocked of it.
    void replace_blocked(NodeId id, Op op, std::vector<ValueId> inputs, Attributes attrs) {
        const Node n = g_.node(id);
        g_.remove_node(id);
        define_blocked(n.outputs[0], op, std::move(inputs), std::move(attrs), n.name);
    }

    static bool is_f32_nchw(const Value& v) {
        return v.typed && v.dtype == DType::F32 && v.shape.size() == 4;
    }
    // An axis of an NCHW value, counted from the front (the same index in the blocked layout
    // for N, C, H and W).
    static int64_t nchw_axis(int64_t axis) { return axis < 0 ? axis + 4 : axis; }

    // Copies, not references: adding values and nodes below may move the graph's storage.
    int rewrite_conv(NodeId id) {
        const Node n = g_.node(id);
        if (n.outputs.size() != 1 || n.inputs.size() < 2)
            return 0;
        const Value x = g_.value(n.inputs[0]);
        const Value w = g_.value(n.inputs[1]);
        const ValueId bias = n.input(2);
        if (!is_f32_nchw(x) || !is_f32_nchw(g_.value(n.outputs[0])) || !w.is_constant() ||
            w.dtype != DType::F32 || w.shape.size() != 4)
            return 0;
        if (bias != kNoValue &&
            (!g_.value(bias).is_constant() || g_.value(bias).dtype != DType::F32))
            return 0;
        const int64_t group = n.attr_int("group", 1), C = x.shape[1], K = w.shape[0];
        const bool depthwise = group != 1 && group == C && K == C && w.shape[1] == 1;
        // Fewer output channels than half a block: padding them would more than double the
        // work. From half a block up, the conv and its readers computing the padding channels
        // of the one block cost less than taking its input back to NCHW for an NCHW conv and
        // its output to blocks again (MNASNet 0.5's 16 -> 8 conv at 112 x 112).
        if (2 * K < block_)
            return 0;
        // Fewer input channels than one block (a network's first conv on RGB or grey images):
        // padding them would multiply the conv's work by up to x / C, so the conv reads all C
        // as one block and still writes blocks of x (vector stores, and a blocked consumer).
        const bool single = C < block_;
        if (single && group != 1)
            return 0;
        // Other grouped convs in groups of whole blocks: groups as wide as blocks or wider
        // (ResNeXt's later stages) as they are; groups narrower than a block (RegNet's 8
        // channels) one group per block, with block-diagonal weights: up to
        // kMaxGroupWidening times the products, on the blocked kernels instead of NCHW loops
        // at a few percent of the peak.
        int64_t block_groups = 1;
        bool diagonal = false;
        if (group != 1 && !depthwise) {
            const int64_t in_width = C / group, out_width = K / group;
            if (in_width % block_ == 0 && out_width % block_ == 0) {
                block_groups = group;
            } else if (in_width == out_width && block_ % in_width == 0 &&
                       in_width * kMaxGroupWidening >= block_) {
                block_groups = channel_blocks(C, block_);
                diagonal = true;
            } else {
                return 0; // stays NCHW
            }
        }
        Attributes attrs;
        for (const char* key : {"kernel_shape", "strides", "dilations", "pads"})
            if (n.has_attr(key))
                attrs[key] = n.attrs.at(key);
        attrs["block"] = Attribute::of_int(block_);
        attrs["depthwise"] = Attribute::of_int(depthwise ? 1 : 0);
        if (block_groups > 1)
            attrs["groups"] = Attribute::of_int(block_groups);
        // A channel slice of a blocked value that no whole-block Slice can take (ShuffleNet's
        // second half of 48 channels, [24, 48) in blocks of 16): the conv reads the blocks
        // that hold it, [1, 3), as many as the slice's own padded blocks, with zero weights on
        // the channels outside it.
        const ChannelSlice cs = single || group != 1 || has_twin(n.inputs[0])
                                    ? ChannelSlice{}
                                    : channel_slice(n.inputs[0]);
        const int64_t lead = cs.start % block_, in_blocks = channel_blocks(C, block_);
        const bool shifted = cs.source != kNoValue && channel_blocks(lead + C, block_) == in_blocks;
        std::vector<ValueId> ins = {
            single    ? single_block(n.inputs[0])
            : shifted ? block_range(cs.source, cs.start / block_, cs.start / block_ + in_blocks)
                      : blocked(n.inputs[0])};
        ins.push_back(g_.add_constant(
            w.name + "_nchwc",
            diagonal ? block_diagonal_conv_weight(*w.constant, block_)
            : shifted
                ? block_conv_weight(with_leading_input_channels(*w.constant, lead), block_, false)
                : block_conv_weight(*w.constant, block_, depthwise, single ? C : 0)));
        if (bias != kNoValue) {
            const Value b = g_.value(bias);
            ins.push_back(
                g_.add_constant(b.name + "_nchwc", block_channel_vector(*b.constant, block_)));
        }
        replace_blocked(id, Op::ConvBlocked, std::move(ins), std::move(attrs));
        return 1;
    }

    // QConv -> PackU8Words (the input as padded words of four channels) -> QConvBlocked, on
    // the blocked twin of its u8 input (a blocked QuantizeLinear's output, between convs) or,
    // for fewer input channels than a block (an image), on one block of them padded to a
    // multiple of 4; an image of at most 4 channels is packed from its NCHW planes directly
    // (a blocked copy of 4-byte pixels would read its planes across, a gather per vector). The
    // words come in blocks of kQConvWordsBlock channels when C is a multiple of it (and it of the
    // layout's block), else in the activations' blocks. The padding channels' weights are 0 and
    // their offsets and scales too, so that padding output channels are 0, as ConvBlocked's.
    int rewrite_qconv(NodeId id) {
        const Node n = g_.node(id);
        const Value x = g_.value(n.inputs[0]);
        const Value w = g_.value(n.inputs[1]);
        const int64_t C = x.shape[1], K = w.shape[0];
        if (K < block_ || block_ % 4 != 0 || !w.is_constant() ||
            !g_.value(n.inputs[2]).is_constant() || !g_.value(n.inputs[3]).is_constant())
            return 0;
        if (n.attr_int("group", 1) != 1)
            return rewrite_qdepthwise(id);
        const bool single = C < block_;
        const int64_t x_block = single ? (C + 3) / 4 * 4 : block_;
        const bool wide = !single && C % kQConvWordsBlock == 0 && kQConvWordsBlock % block_ == 0;
        const int64_t in_block = wide ? kQConvWordsBlock : x_block;
        const bool planes = single && x_block == 4;
        const ValueId xb = planes   ? n.inputs[0]
                           : single ? single_block(n.inputs[0], x_block)
                                    : blocked(n.inputs[0]);
        const Value xbv = g_.value(xb);
        const int64_t blocks = planes ? 1 : xbv.shape[1] * x_block / in_block;
        const std::vector<int64_t> pads = n.attr_ints("pads", {0, 0, 0, 0});
        const ValueId words = g_.add_value(x.name + "_words", DType::I32,
                                           {xbv.shape[0], blocks, xbv.shape[2] + pads[0] + pads[2],
                                            xbv.shape[3] + pads[1] + pads[3], in_block / 4});
        Attributes pack = {{"pads", Attribute::of_ints(pads)},
                           {"pad_byte", Attribute::of_int(n.attr_int("x_zero_point", 0))}};
        if (in_block != x_block)
            pack["words_block"] = Attribute::of_int(in_block);
        g_.add_node(Op::PackU8Words, {xb}, {words}, std::move(pack), n.name + "_pack");
        Attributes attrs;
        for (const char* key : {"kernel_shape", "strides", "dilations"})
            if (n.has_attr(key))
                attrs[key] = n.attrs.at(key);
        attrs["block"] = Attribute::of_int(block_);
        std::vector<ValueId> ins = {words};
        ins.push_back(g_.add_constant(w.name + "_words",
                                      pack_conv_weight_words(*w.constant, block_, in_block)));
        for (size_t i : {size_t(2), size_t(3)}) {
            const Value v = g_.value(n.inputs[i]);
            ins.push_back(
                g_.add_constant(v.name + "_nchwc", block_channel_vector(*v.constant, block_)));
        }
        replace_blocked(id, Op::QConvBlocked, std::move(ins), std::move(attrs));
        return 1;
    }

    // A depthwise QConv (the quantized-ops pass makes only those whose sums are exact in f32)
    // -> QDepthwiseBlocked on the blocked twin of its u8 input, its s8 weights and i32
    // offsets as f32: the 1x1 conv before it stores bytes, and the depthwise conv reads them
    // with its zero point as padding. Padding channels have weights, offsets and scales 0.
    int rewrite_qdepthwise(NodeId id) {
        const Node n = g_.node(id);
        const Value w = g_.value(n.inputs[1]);
        const Value off = g_.value(n.inputs[2]);
        const Value sc = g_.value(n.inputs[3]);
        Attributes attrs;
        for (const char* key : {"kernel_shape", "strides", "dilations", "pads"})
            if (n.has_attr(key))
                attrs[key] = n.attrs.at(key);
        attrs["block"] = Attribute::of_int(block_);
        attrs["x_zero_point"] = Attribute::of_int(n.attr_int("x_zero_point", 0));
        std::vector<ValueId> ins = {blocked(n.inputs[0])};
        ins.push_back(g_.add_constant(
            w.name + "_nchwc", block_conv_weight(w.constant->cast(DType::F32), block_, true)));
        ins.push_back(g_.add_constant(
            off.name + "_nchwc", block_channel_vector(off.constant->cast(DType::F32), block_)));
        ins.push_back(
            g_.add_constant(sc.name + "_nchwc", block_channel_vector(*sc.constant, block_)));
        replace_blocked(id, Op::QDepthwiseBlocked, std::move(ins), std::move(attrs));
        return 1;
    }

    // A MaxPool or AveragePool whose input is blocked anyway pools the blocked tensor
    // (channels never mix): a max of f32 or of bytes (a QDQ model's, the quantized-ops pass),
    // an average of f32, whose padding channels average to 0. In NCHW, Inception v3's 3x3
    // average pools took their inputs back to NCHW and the convs after them blocked the result
    // again: 10 of its 98 ms at one thread.
    int rewrite_pool(NodeId id) {
        const Node n = g_.node(id);
        if (n.outputs.size() != 1 || n.inputs.size() != 1 || !has_twin(n.inputs[0]) ||
            n.attr_int("storage_order", 0) != 0)
            return 0;
        const Value out = g_.value(n.outputs[0]);
        const bool max = n.op == Op::MaxPool;
        if (!out.typed || out.shape.size() != 4 ||
            (out.dtype != DType::F32 && (out.dtype != DType::U8 || !max)))
            return 0;
        Attributes attrs = n.attrs;
        attrs.erase("storage_order");
        attrs["block"] = Attribute::of_int(block_);
        replace_blocked(id, max ? Op::MaxPoolBlocked : Op::AveragePoolBlocked,
                        {blocked(n.inputs[0])}, std::move(attrs));
        return 1;
    }

    // A global average pool of a blocked value averages each channel block's rows and columns
    // in place, [N, CB, H, W, x] -> [N, CB, 1, 1, x]: a vector of x channels per step, and
    // only the pooled values go back to NCHW. (In NCHW, the whole image went back first and
    // each channel became one chain of scalar adds: SqueezeNet's 1000-channel 13 x 13 pool
    // took 0.11 ms on one Rocket Lake core.) Padding channels average to finite values that
    // the conversion back drops.
    int rewrite_global_average_pool(NodeId id) {
        const Node n = g_.node(id);
        if (n.outputs.size() != 1 || n.inputs.size() != 1 || !has_twin(n.inputs[0]) ||
            !is_f32_nchw(g_.value(n.outputs[0])))
            return 0;
        replace_blocked(id, Op::ReduceMean, {blocked(n.inputs[0])},
                        {{"axes", Attribute::of_ints({2, 3})}, {"keepdims", Attribute::of_int(1)}});
        return 1;
    }

    // A ReduceMean over the rows and columns of a blocked value (MNASNet's and other exports'
    // x.mean([2, 3]) in place of a global average pool) is that pool's blocked ReduceMean;
    // without keepdims, a Reshape of its NCHW result drops the unit dims.
    int rewrite_spatial_mean(NodeId id) {
        const Node n = g_.node(id);
        if (n.outputs.size() != 1 || n.inputs.size() != 1 || !has_twin(n.inputs[0]) ||
            !is_f32_nchw(g_.value(n.inputs[0])) || !n.has_attr("axes"))
            return 0;
        std::vector<int64_t> axes = n.attr_ints("axes");
        for (int64_t& a : axes)
            a = nchw_axis(a);
        std::sort(axes.begin(), axes.end());
        if (axes != std::vector<int64_t>{2, 3})
            return 0;
        const Attributes mean = {{"axes", Attribute::of_ints({2, 3})},
                                 {"keepdims", Attribute::of_int(1)}};
        if (n.attr_int("keepdims", 1) != 0) {
            replace_blocked(id, Op::ReduceMean, {blocked(n.inputs[0])}, mean);
            return 1;
        }
        const Value x = g_.value(n.inputs[0]);
        const Value y = g_.value(n.outputs[0]);
        const ValueId pooled =
            g_.add_value(y.name + "_pooled", DType::F32, {x.shape[0], x.shape[1], 1, 1});
        define_blocked(pooled, Op::ReduceMean, {blocked(n.inputs[0])}, mean, n.name);
        replace_node(g_, id, Op::Reshape,
                     {pooled, add_int64s(g_, y.name + "_shape", {x.shape[0], x.shape[1]})}, {});
        return 1;
    }

    // A constant that varies along the channel axis only (shape [C,1,1], [1,C,1,1], ...),
    // re-laid out to [1, CB, 1, 1, x]; or a constant of all-one dims, which broadcasts against
    // the blocked tensor as it is. kNoValue otherwise.
    ValueId channel_constant(ValueId v, int64_t channels) {
        const Value c = g_.value(v);
        if (!c.is_constant() || c.shape.size() > 4)
            return kNoValue;
        Shape s = c.shape;
        s.insert(s.begin(), 4 - s.size(), 1);
        if (s[0] != 1 || s[2] != 1 || s[3] != 1 || (s[1] != 1 && s[1] != channels))
            return kNoValue;
        if (s[1] == 1)
            return v;
        const std::string name = c.name + "_nchwc";
        TensorData vec = c.constant->reshaped({channels});
        TensorData blocked_vec = block_channel_vector(vec, block_);
        const int64_t cb = blocked_vec.shape()[0];
        return g_.add_constant(name, blocked_vec.reshaped({1, cb, 1, 1, block_}));
    }

    int rewrite_elementwise(NodeId id) {
        const Node n = g_.node(id);
        if (n.outputs.size() != 1 || n.inputs.empty())
            return 0;
        const Value out = g_.value(n.outputs[0]);
        const bool quantize = blockable_quantize(n.op);
        if (quantize) { // integer or float NCHW values; only per-tensor parameters
            if (!out.typed || out.shape.size() != 4)
                return 0;
            for (size_t i = 1; i < n.inputs.size(); ++i)
                if (shape_numel(g_.value(n.inputs[i]).shape) != 1)
                    return 0;
        } else if (!is_f32_nchw(out)) {
            return 0;
        }
        // Clip's bounds and the quantization parameters are scalars that stay as they are.
        const size_t data_inputs = n.op == Op::Clip || quantize ? 1 : n.inputs.size();
        bool any_twin = false;
        for (size_t i = 0; i < data_inputs; ++i) {
            const ValueId v = n.inputs[i];
            if (v == kNoValue)
                return 0;
            any_twin = any_twin || has_twin(v);
        }
        if (!any_twin)
            return 0; // nothing blocked reaches this node: leave it in NCHW
        std::vector<ValueId> ins;
        std::vector<bool> to_block(n.inputs.size(), false);
        for (size_t i = 0; i < n.inputs.size(); ++i) {
            const ValueId v = n.inputs[i];
            if (i >= data_inputs) {
                ins.push_back(v);
                continue;
            }
            const Value& val = g_.value(v);
            // The whole tensor, or a computed one per image and channel (a squeeze-and-
            // excitation block's scales, [N, C, 1, 1]), which broadcasts over the rows and
            // columns in blocks as in NCHW: converted below, once every operand is known to
            // fit (the scales' padding channels are finite, and meet 0 or stay padding).
            const bool per_channel = val.typed && !val.is_constant() && val.shape.size() == 4 &&
                                     val.shape[0] == out.shape[0] && val.shape[1] == out.shape[1] &&
                                     val.shape[2] == 1 && val.shape[3] == 1;
            if (val.typed && (val.shape == out.shape || per_channel)) {
                ins.push_back(v);
                to_block[i] = true;
                continue;
            }
            const ValueId c = channel_constant(v, out.shape[1]);
            if (c == kNoValue)
                return 0;
            ins.push_back(c);
        }
        for (size_t i = 0; i < data_inputs; ++i)
            if (to_block[i])
                ins[i] = blocked(ins[i]);
        replace_blocked(id, n.op, std::move(ins), n.attrs);
        return 1;
    }

    // A Concat of values of which one at least is blocked: the Concat of the blocked twins.
    // Along the channels (SqueezeNet's Fire modules join two convs' outputs) it is along the
    // channel-block axis, when every part but the last fills whole blocks (the last one's
    // padding channels then end the result, where its own padding belongs). Without it, each
    // part goes back to NCHW, is concatenated, and the result is blocked again for the next
    // conv: three passes over memory instead of one. Along rows or columns (the parts of a conv
    // that drop_padding_taps split) it is along the same axis of the blocked layout.
    int rewrite_concat(NodeId id) {
        const Node n = g_.node(id);
        const Value out = g_.value(n.outputs[0]);
        if (n.outputs.size() != 1 || n.inputs.empty() || !is_f32_nchw(out))
            return 0;
        const int64_t axis = nchw_axis(n.attr_int("axis", 0));
        if (axis < 1 || axis > 3)
            return 0;
        bool any_twin = false;
        for (size_t i = 0; i < n.inputs.size(); ++i) {
            const Value& v = g_.value(n.inputs[i]);
            if (!is_f32_nchw(v) ||
                (axis == 1 && i + 1 < n.inputs.size() && v.shape[1] % block_ != 0))
                return 0;
            any_twin = any_twin || has_twin(n.inputs[i]);
        }
        if (!any_twin)
            return 0;
        std::vector<ValueId> ins;
        for (ValueId v : n.inputs)
            ins.push_back(blocked(v));
        replace_blocked(id, Op::Concat, std::move(ins), {{"axis", Attribute::of_int(axis)}});
        return 1;
    }

    // A Slice of a blocked value (steps absent, constant starts, ends and axes): the Slice of
    // the blocked twin. Along rows and columns (the inputs of a conv's parts, drop_padding_taps)
    // with the same bounds. Along the channels on whole blocks (horizontal-conv-fusion gives
    // each merged convolution its channels back so) along the channel-block axis; the end may
    // be the channel count, a partial last block, whose padding channels then end the result as
    // its own would. Any other slice stays NCHW.
    int rewrite_slice(NodeId id) {
        const Node n = g_.node(id);
        if (n.outputs.size() != 1 || n.inputs.size() < 4 || n.input(4) != kNoValue)
            return 0; // steps absent
        const Value in = g_.value(n.inputs[0]);
        if (!is_f32_nchw(in) || !has_twin(n.inputs[0]))
            return 0;
        const Value &starts = g_.value(n.inputs[1]), &ends = g_.value(n.inputs[2]),
                    &axes = g_.value(n.inputs[3]);
        if (!starts.is_constant() || !ends.is_constant() || !axes.is_constant())
            return 0;
        std::vector<int64_t> axis = axes.constant->as_i64();
        const std::vector<int64_t> start = starts.constant->as_i64(), end = ends.constant->as_i64();
        if (axis.empty() || start.size() != axis.size() || end.size() != axis.size())
            return 0;
        bool spatial = true;
        for (int64_t& a : axis) {
            a = nchw_axis(a);
            spatial = spatial && (a == 2 || a == 3);
        }
        const std::string base = g_.value(n.outputs[0]).name + "_nchwc/";
        auto ints = [&](const char* what, std::vector<int64_t> v) {
            return add_int64s(g_, base + what, std::move(v));
        };
        if (spatial) {
            replace_blocked(id, Op::Slice,
                            {blocked(n.inputs[0]), n.inputs[1], n.inputs[2], ints("axes", axis)},
                            {});
            return 1;
        }
        const int64_t channels = in.shape[1];
        const int64_t first = start[0], last = std::min(end[0], channels);
        if (axis.size() != 1 || axis[0] != 1 || first < 0 || first >= last || first % block_ != 0 ||
            (last % block_ != 0 && last != channels))
            return 0;
        replace_blocked(id, Op::Slice,
                        {blocked(n.inputs[0]), ints("starts", {first / block_}),
                         ints("ends", {channel_blocks(last, block_)}), ints("axes", {1})},
                        {});
        return 1;
    }

    // The only node reading v, when v is not a graph output and that node is `op`; kNoNode
    // otherwise.
    NodeId sole_user(ValueId v, Op op) const {
        const std::vector<NodeId> users = g_.users(v);
        if (users.size() != 1 || is_graph_output(g_, v) || g_.node(users[0]).op != op)
            return kNoNode;
        return users[0];
    }

    // A value that is channels [start, start + C) of `source` (a Slice along axis 1 alone,
    // constant bounds, no steps) when source is blocked; source kNoValue otherwise.
    struct ChannelSlice {
        ValueId source = kNoValue;
        int64_t start = 0;
    };
    ChannelSlice channel_slice(ValueId v) const {
        const Node* n = producer_op(g_, v, Op::Slice);
        if (!n || n->inputs.size() < 4 || n->input(4) != kNoValue || !has_twin(n->inputs[0]))
            return {};
        const Value &starts = g_.value(n->inputs[1]), &axes = g_.value(n->inputs[3]);
        if (!starts.is_constant() || !axes.is_constant() || !is_f32_nchw(g_.value(v)) ||
            !is_f32_nchw(g_.value(n->inputs[0])))
            return {};
        const std::vector<int64_t> start = starts.constant->as_i64(),
                                   axis = axes.constant->as_i64();
        if (axis.size() != 1 || nchw_axis(axis[0]) != 1 || start.size() != 1 || start[0] < 0)
            return {};
        // The output's typed shape already says where the slice ends.
        if (start[0] + g_.value(v).shape[1] > g_.value(n->inputs[0]).shape[1])
            return {};
        return {n->inputs[0], start[0]};
    }

    // Blocks [first, end) of NCHW value v's blocked twin (the twin itself when that is all).
    ValueId block_range(ValueId v, int64_t first, int64_t end) {
        const ValueId b = blocked(v);
        if (first == 0 && end == g_.value(b).shape[1])
            return b;
        return slice_axis1(b, first, end,
                           g_.value(b).name + "/blocks" + std::to_string(first) + "_" +
                               std::to_string(end));
    }

    // OIHW weights [K, C, R, S] as [K, lead + C, R, S], the first `lead` input channels 0.
    static TensorData with_leading_input_channels(const TensorData& w, int64_t lead) {
        const Shape& s = w.shape();
        TensorData out(DType::F32, {s[0], lead + s[1], s[2], s[3]});
        const int64_t taps = s[2] * s[3];
        for (int64_t k = 0; k < s[0]; ++k)
            std::copy_n(w.data<float>() + k * s[1] * taps, s[1] * taps,
                        out.data<float>() + (k * (lead + s[1]) + lead) * taps);
        return out;
    }

    // `op` of `inputs` into a new typed f32 value `name` of `shape`.
    ValueId add_view(Op op, std::vector<ValueId> inputs, Attributes attrs, const std::string& name,
                     Shape shape) {
        const ValueId out = g_.add_value(name, DType::F32, std::move(shape));
        g_.add_node(op, std::move(inputs), {out}, std::move(attrs), name);
        return out;
    }
    ValueId add_reshape(ValueId x, Shape shape, const std::string& name) {
        const ValueId s = add_int64s(g_, name + "/shape", shape);
        return add_view(Op::Reshape, {x, s}, {}, name, std::move(shape));
    }
    // Indices [first, end) of axis 1 of typed value x, typed.
    ValueId slice_axis1(ValueId x, int64_t first, int64_t end, const std::string& name) {
        Shape shape = g_.value(x).shape;
        shape[1] = end - first;
        return add_slice(g_, x, {first}, {end}, {1}, name, std::move(shape));
    }

    // Sub-blocks [first, first + count) of blocked value b [N, CB, H, W, x], sub-block t being
    // channels [t * x/g, (t + 1) * x/g): b viewed as [N, CB, g, H, W, x/g] and then as
    // [N, CB * g, H, W, x/g], sliced, as [N, count, H, W, x/g, 1].
    ValueId sub_blocks(ValueId b, int64_t g, int64_t first, int64_t count,
                       const std::string& name) {
        const Shape s = g_.value(b).shape; // [N, CB, H, W, x]
        const int64_t N = s[0], CB = s[1], H = s[2], W = s[3], u = block_ / g;
        const ValueId halves = add_reshape(b, {N, CB, H, W, g, u}, name + "/lanes");
        const ValueId planes =
            add_view(Op::Transpose, {halves}, {{"perm", Attribute::of_ints({0, 1, 4, 2, 3, 5})}},
                     name + "/planes", {N, CB, g, H, W, u});
        ValueId subs = add_reshape(planes, {N, CB * g, H, W, u}, name + "/subblocks");
        if (first != 0 || count != CB * g)
            subs = slice_axis1(subs, first, first + count, name + "/slice");
        return add_reshape(subs, {N, count, H, W, u, 1}, name + "/part");
    }

    // The g operands of a channel shuffle's input x [N, C, H, W] as (blocked value, first
    // sub-block of x/g channels), when x is a Concat along the channels of g parts of C/g
    // channels each: each blocked, or a channel slice of a blocked value that starts on a
    // sub-block; or the blocked Concat of g whole-block parts that replaced one. Empty
    // otherwise.
    std::vector<std::pair<ValueId, int64_t>> shuffle_operands(ValueId x, int64_t g) {
        const int64_t C = g_.value(x).shape[1], u = block_ / g;
        std::vector<std::pair<ValueId, int64_t>> parts;
        if (const Node* from = from_node(x)) {
            const Node* cat = producer_op(g_, from->input(0), Op::Concat);
            if (!cat || cat->attr_int("axis", 0) != 1 ||
                static_cast<int64_t>(cat->inputs.size()) != g)
                return {};
            for (ValueId b : std::vector<ValueId>(cat->inputs)) {
                if (g_.value(b).shape[1] * block_ != C / g)
                    return {};
                parts.emplace_back(b, 0);
            }
            return parts;
        }
        const Node* cat = producer_op(g_, x, Op::Concat);
        if (!cat || nchw_axis(cat->attr_int("axis", 0)) != 1 ||
            static_cast<int64_t>(cat->inputs.size()) != g)
            return {};
        // A copy: blocked() below may add values and nodes, moving the graph's storage.
        for (ValueId p : std::vector<ValueId>(cat->inputs)) {
            const Value pv = g_.value(p);
            if (!is_f32_nchw(pv) || pv.shape[1] != C / g)
                return {};
            if (has_twin(p)) {
                parts.emplace_back(blocked(p), 0);
                continue;
            }
            const ChannelSlice cs = channel_slice(p);
            if (cs.source == kNoValue || cs.start % u != 0)
                return {};
            parts.emplace_back(blocked(cs.source), cs.start / u);
        }
        return parts;
    }

    // A channel shuffle (ShuffleNet's: Reshape [N, C, H, W] -> [N, g, C/g, H, W], Transpose
    // perm [0, 2, 1, 3, 4], Reshape back to [N, C, H, W]; output channel i * g + s is input
    // channel s * C/g + i) in blocks, when g divides x. Output block b, lane m * g + s is
    // channel b * x + m * g + s, input channel s * C/g + b * x/g + m: lane m of sub-block b
    // (x/g channels) of the input's group s. When the input is a Concat of the g groups
    // (ShuffleNet's units join the two branches so), each group blocked or a channel slice of a
    // blocked value starting on a sub-block, the shuffle reads the groups' sub-blocks
    // directly: each as [N, C/x, H, W, x/g, 1], concatenated along the last axis and viewed as
    // [N, C/x, H, W, x]; the concat and slices are never written. Otherwise, when the groups
    // fill whole blocks, the blocked input [N, C/x, H, W, x] is viewed as [N, g(s), C/(gx)(b),
    // H, W, g(h), x/g(m)] and transposed to [N, b, h, H, W, m, s]. Each lane vector of the
    // result is g windows of x/g consecutive channels (dense loads and shuffles in the LLVM
    // backend). Without it, each shuffle took its value back to NCHW and the next unit's
    // convs blocked it again, three passes over memory at 28% of ShuffleNet V2's time.
    int rewrite_channel_shuffle(NodeId id) {
        const Node split = g_.node(id);
        if (split.outputs.size() != 1 || split.inputs.empty())
            return 0;
        const Value x = g_.value(split.inputs[0]);
        const Value grouped = g_.value(split.outputs[0]);
        if (!is_f32_nchw(x) || !grouped.typed || grouped.shape.size() != 5)
            return 0;
        const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        const int64_t g = grouped.shape[1];
        if (g < 2 || grouped.shape != Shape{N, g, C / g, H, W} || C % g != 0 || block_ % g != 0 ||
            C % block_ != 0)
            return 0;
        const NodeId swap_id = sole_user(split.outputs[0], Op::Transpose);
        if (swap_id == kNoNode ||
            g_.node(swap_id).attr_ints("perm", {}) != std::vector<int64_t>{0, 2, 1, 3, 4})
            return 0;
        const NodeId merge_id = sole_user(g_.node(swap_id).outputs[0], Op::Reshape);
        if (merge_id == kNoNode || g_.value(g_.node(merge_id).outputs[0]).shape != x.shape)
            return 0;
        // Copies: the nodes added below may move the graph's storage.
        const ValueId y = g_.node(merge_id).outputs[0];
        const std::string name = g_.node(merge_id).name;
        const std::string base = g_.value(y).name + "_nchwc/";
        const int64_t CB = C / block_, u = block_ / g;
        const std::vector<std::pair<ValueId, int64_t>> operands =
            shuffle_operands(split.inputs[0], g);
        ValueId shuffled;
        if (!operands.empty()) {
            std::vector<ValueId> parts;
            for (size_t s = 0; s < operands.size(); ++s)
                parts.push_back(sub_blocks(operands[s].first, g, operands[s].second, CB,
                                           base + "group" + std::to_string(s)));
            shuffled = add_view(Op::Concat, parts, {{"axis", Attribute::of_int(5)}}, base + "lanes",
                                {N, CB, H, W, u, g});
        } else {
            if (!has_twin(split.inputs[0]) || C % (g * block_) != 0)
                return 0;
            const ValueId view =
                add_reshape(blocked(split.inputs[0]), {N, g, CB / g, H, W, g, u}, base + "groups");
            shuffled = add_view(Op::Transpose, {view},
                                {{"perm", Attribute::of_ints({0, 2, 5, 3, 4, 6, 1})}},
                                base + "swapped", {N, CB / g, g, H, W, u, g});
        }
        for (NodeId dead : {merge_id, swap_id, id})
            g_.remove_node(dead);
        define_blocked(y, Op::Reshape,
                       {shuffled, add_int64s(g_, base + "shape", {N, CB, H, W, block_})}, {}, name);
        return 1;
    }

    // LayoutToBlocked(LayoutFromBlocked(b)) -> b and LayoutFromBlocked(LayoutToBlocked(x)) -> x
    // when the shapes agree (graphs built elsewhere, or a second run).
    void cancel_pairs() {
        for (NodeId id : g_.topological_order()) {
            if (!g_.is_live(id))
                continue;
            const Node& n = g_.node(id);
            const Op inner = n.op == Op::LayoutToBlocked     ? Op::LayoutFromBlocked
                             : n.op == Op::LayoutFromBlocked ? Op::LayoutToBlocked
                                                             : n.op;
            if (inner == n.op)
                continue;
            const Node* p = producer_op(g_, n.input(0), inner);
            if (!p || p->attr_int("block", 0) != n.attr_int("block", 0))
                continue;
            const ValueId src = p->input(0);
            if (g_.value(src).shape != g_.value(n.outputs[0]).shape)
                continue;
            if (forward_output(g_, id, src))
                ++cancelled_;
        }
    }

    Graph& g_;
    const int64_t block_;
    std::map<ValueId, ValueId> twin_;         // NCHW value -> its blocked twin
    std::map<ValueId, ValueId> single_block_; // NCHW image -> [N, 1, H, W, C]
    int convs_ = 0, pools_ = 0, elementwise_ = 0, concats_ = 0, slices_ = 0, shuffles_ = 0,
        cancelled_ = 0;
};

} // namespace

int64_t layout_block_for(int vector_bits) { return std::max<int64_t>(8, vector_bits / 32); }

PassResult convert_layout_nchwc(Graph& g, int64_t block) {
    if (block < 1)
        throw UserError() << "layout block " << block << " must be positive";
    return LayoutRewriter(g, block).run();
}

} // namespace tessera::graph
