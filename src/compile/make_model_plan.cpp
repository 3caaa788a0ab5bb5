// The runtime plan of a prepared model build: tensors, weights in the layouts the kernels read,
// the arena offsets of the memory plan and the call sequence (model_compiler.h).
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "tessera/compile/model_compiler.h"
#include "tessera/graph/index_inputs.h"
#include "tessera/graph/memory_plan.h"
#include "tessera/schedule/layout.h"
#include "tessera/support/error.h"
#include "tessera/te/compute.h"

namespace tessera::compile {

namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

runtime::PlanDType plan_dtype(graph::DType t) {
    return static_cast<runtime::PlanDType>(graph::dtype_info(t).abi);
}

/// A stable text of a layout, as a map key ("" for the identity).
std::string layout_key(const sched::LayoutTransform& t) {
    if (t.is_identity())
        return "";
    return fmt::format("{}/{}", fmt::join(t.factors, ","), fmt::join(t.order, ","));
}

/// Builds the plan's tensors and calls group by group.
class PlanBuilder {
  public:
    PlanBuilder(const ModelBuild& b, std::vector<uint8_t>& weights,
                const std::vector<std::string>& cubins, std::string* cubin_blob)
        : b_(b), weights_(weights), cubins_(cubins), cubin_blob_(cubin_blob) {}

    runtime::ModelPlan build() {
        const graph::Graph& g = b_.graph;
        plan_.model_name = b_.model_name;
        weights_.clear();
        for (size_t k = 0; k < g.inputs.size(); ++k) {
            const int id = add_value_tensor(g.inputs[k], runtime::TensorStorage::Input,
                                            static_cast<int64_t>(k));
            plan_.inputs.push_back(id);
            tensor_of_[g.inputs[k]] = id;
        }
        add_outputs();
        add_arena();
        for (size_t i = 0; i < b_.tasks.size(); ++i)
            plan_.kernels.push_back(kernel_symbol(static_cast<int>(i)));
        add_group_calls();
        // Outputs that repeat an input, a weight or another output are copied once every
        // kernel has run.
        for (const auto& [src, dst] : copies_) {
            runtime::PlanCall call;
            call.kernel = -1;
            call.args = {src, dst};
            call.label = "copy to output " + plan_.tensors[static_cast<size_t>(dst)].name;
            plan_.calls.push_back(std::move(call));
        }
        weights_.resize(static_cast<size_t>(align_up(static_cast<int64_t>(weights_.size()))));
        plan_.weight_bytes = static_cast<int64_t>(weights_.size());
        if (b_.target.is_cuda())
            add_cuda_modules();
        for (const graph::IndexInput& in : graph::index_inputs(g))
            plan_.index_checks.push_back(
                {static_cast<int32_t>(in.input), in.bound, in.consumer});
        runtime::validate_plan(plan_);
        return std::move(plan_);
    }

  private:
    int add_tensor(runtime::PlanTensor t) {
        plan_.tensors.push_back(std::move(t));
        return static_cast<int>(plan_.tensors.size()) - 1;
    }

    /// A tensor for graph value v, dense, in `storage` at `offset`.
    int add_value_tensor(graph::ValueId v, runtime::TensorStorage storage, int64_t offset) {
        const graph::Value& val = b_.graph.value(v);
        runtime::PlanTensor t;
        t.name = val.name;
        t.dtype = plan_dtype(val.dtype);
        t.shape = val.shape;
        t.storage = storage;
        t.offset = offset;
        t.bytes =
            graph::shape_numel(val.shape) * static_cast<int64_t>(graph::dtype_size(val.dtype));
        return add_tensor(std::move(t));
    }

    /// The weight tensor of constant v stored in `layout` (packed once per distinct layout).
    int weight_tensor(graph::ValueId v, const sched::LayoutTransform& layout) {
        const auto key = std::make_pair(v, layout_key(layout));
        auto it = weight_of_.find(key);
        if (it != weight_of_.end())
            return it->second;
        const graph::Value& val = b_.graph.value(v);
        TESSERA_CHECK(val.is_constant()) << "value '" << val.name << "' is not a constant";
        // Weights stored in f16: their (exactly representable) values as f16 bits, converted
        // once here; others are read in place.
        std::optional<graph::TensorData> f16;
        if (val.stored_f16)
            f16 = val.constant->cast(graph::DType::F16);
        const graph::TensorData& data = f16 ? *f16 : *val.constant;
        const size_t elem = graph::dtype_size(data.dtype());
        const int64_t offset = align_up(static_cast<int64_t>(weights_.size()));
        int64_t bytes = static_cast<int64_t>(data.nbytes());
        if (!layout.is_identity()) {
            sched::check_layout(layout, val.shape);
            bytes = graph::shape_numel(sched::packed_shape(layout, val.shape)) *
                    static_cast<int64_t>(elem);
        }
        weights_.resize(static_cast<size_t>(offset + bytes), 0);
        uint8_t* dst = weights_.data() + offset;
        if (layout.is_identity()) {
            if (bytes > 0)
                std::copy(data.raw(), data.raw() + bytes, dst);
        } else {
            sched::pack_layout(layout, val.shape, elem, data.raw(), dst);
        }
        const int id = add_value_tensor(v, runtime::TensorStorage::Weight, offset);
        plan_.tensors[static_cast<size_t>(id)].dtype = plan_dtype(data.dtype());
        plan_.tensors[static_cast<size_t>(id)].bytes = bytes;
        if (!layout.is_identity())
            plan_.tensors[static_cast<size_t>(id)].name += " (packed " + key.second + ")";
        weight_of_[key] = id;
        return id;
    }

    /// Output tensors; an output value that is an input, a constant or an earlier output is
    /// a copy into its own output tensor.
    void add_outputs() {
        const graph::Graph& g = b_.graph;
        for (size_t k = 0; k < g.outputs.size(); ++k) {
            const graph::ValueId v = g.outputs[k];
            const int id =
                add_value_tensor(v, runtime::TensorStorage::Output, static_cast<int64_t>(k));
            plan_.outputs.push_back(id);
            auto it = tensor_of_.find(v);
            if (it != tensor_of_.end())
                copies_.emplace_back(it->second, id);
            else if (g.value(v).is_constant())
                copies_.emplace_back(weight_tensor(v, {}), id);
            else
                tensor_of_[v] = id;
        }
    }

    /// Arena tensors at the offsets of the memory plan's buffers.
    void add_arena() {
        const graph::MemoryPlan mp = graph::plan_memory(b_.graph, b_.groups);
        std::vector<int64_t> buffer_offset;
        for (int64_t bytes : mp.buffer_bytes) {
            buffer_offset.push_back(arena_bytes_);
            arena_bytes_ += align_up(bytes);
        }
        for (const graph::BufferAssignment& a : mp.assignments) {
            if (tensor_of_.count(a.value))
                continue; // a graph output: the caller's buffer
            // A view (an in-place group's operand) lies inside that group's output.
            const int64_t offset = buffer_offset.at(static_cast<size_t>(a.buffer)) + a.offset;
            tensor_of_[a.value] = add_value_tensor(a.value, runtime::TensorStorage::Arena, offset);
        }
    }

    int64_t fresh_arena(int64_t bytes) {
        const int64_t offset = arena_bytes_;
        arena_bytes_ += align_up(bytes);
        return offset;
    }

    /// The tensor of a non-constant value a group reads or writes.
    int value_tensor(graph::ValueId v) {
        auto it = tensor_of_.find(v);
        if (it != tensor_of_.end())
            return it->second;
        // A group output that the memory plan does not cover (none is expected): its own slot.
        const graph::Value& val = b_.graph.value(v);
        const int64_t bytes =
            graph::shape_numel(val.shape) * static_cast<int64_t>(graph::dtype_size(val.dtype));
        const int id = add_value_tensor(v, runtime::TensorStorage::Arena, fresh_arena(bytes));
        tensor_of_[v] = id;
        return id;
    }

    void add_group_calls() {
        std::vector<int> task_of(b_.groups.size(), -1);
        for (size_t t = 0; t < b_.tasks.size(); ++t)
            for (int gi : b_.tasks[t].task.groups)
                task_of.at(static_cast<size_t>(gi)) = static_cast<int>(t);
        for (size_t gi = 0; gi < b_.groups.size(); ++gi) {
            if (b_.groups[gi].operands_in_place)
                continue; // its operands were written in place
            const int t = task_of[gi];
            TESSERA_CHECK(t >= 0) << "group " << gi << " belongs to no task";
            const TaskBuild& tb = b_.tasks[static_cast<size_t>(t)];
            const graph::Task& task = tb.task;
            // The task's first group has its program already; others are rebuilt for their
            // value ids (the same expressions over other values).
            const graph::GroupCompute gc = task.groups.front() == static_cast<int>(gi)
                                               ? task.compute
                                               : graph::group_compute(b_.graph, b_.groups[gi]);
            const sched::State& s = tb.state;
            runtime::PlanCall call;
            call.kernel = t;
            for (size_t i = 0; i < gc.inputs.size(); ++i) {
                const graph::ValueId v = gc.inputs[i];
                if (b_.graph.value(v).is_constant()) {
                    const int sid = s.stage_id_of(s.compute.inputs.at(i));
                    const sched::LayoutTransform layout =
                        sid >= 0 ? s.stages[static_cast<size_t>(sid)].layout
                                 : sched::LayoutTransform();
                    call.args.push_back(weight_tensor(v, layout));
                } else {
                    call.args.push_back(value_tensor(v));
                }
            }
            for (graph::ValueId v : gc.outputs)
                call.args.push_back(value_tensor(v));
            const ir::LoweredFunc& f = tb.kernel;
            TESSERA_CHECK(f.params.size() == call.args.size())
                << "group " << gi << " (" << b_.groups[gi].pattern << ") passes "
                << call.args.size() << " arguments to kernel " << f.name << " of "
                << f.params.size() << " parameters";
            for (size_t k = 0; k < call.args.size(); ++k) {
                const runtime::PlanTensor& pt = plan_.tensors[static_cast<size_t>(call.args[k])];
                const int64_t need =
                    f.params[k].get()->num_elements() * f.params[k].dtype().bytes();
                TESSERA_CHECK(pt.bytes >= need)
                    << "group " << gi << " passes " << pt.bytes << " bytes of '" << pt.name
                    << "' to parameter " << k << " of kernel " << f.name << ", which reads "
                    << need;
            }
            call.label =
                fmt::format("group {} {}", gi, graph::group_signature(b_.graph, b_.groups[gi]));
            call.flops = task.flops;
            call.precision = te::product_precision(task.compute.compute);
            plan_.calls.push_back(std::move(call));
        }
        plan_.arena_bytes = arena_bytes_;
    }

    /// The CUDA fields: each task's module with its cubin placed in the blob (8-byte aligned
    /// offsets, as ELF images like).
    void add_cuda_modules() {
        TESSERA_CHECK(cubins_.size() == b_.tasks.size())
            << b_.tasks.size() << " tasks, " << cubins_.size() << " cubins";
        plan_.target = runtime::PlanTarget::Cuda;
        plan_.cuda_arch = b_.target.arch;
        std::string blob;
        for (size_t t = 0; t < b_.tasks.size(); ++t) {
            TESSERA_CHECK(!cubins_[t].empty()) << "task " << t << " has an empty cubin";
            blob.resize((blob.size() + 7) / 8 * 8, '\0');
            runtime::PlanCudaModule m = b_.tasks[t].cuda_module;
            m.cubin_offset = static_cast<int64_t>(blob.size());
            m.cubin_bytes = static_cast<int64_t>(cubins_[t].size());
            blob += cubins_[t];
            plan_.cuda_modules.push_back(std::move(m));
        }
        plan_.cubin_bytes = static_cast<int64_t>(blob.size());
        if (cubin_blob_)
            *cubin_blob_ = std::move(blob);
    }

    const ModelBuild& b_;
    std::vector<uint8_t>& weights_;
    const std::vector<std::string>& cubins_;
    std::string* cubin_blob_;
    runtime::ModelPlan plan_;
    std::map<graph::ValueId, int> tensor_of_; ///< Inputs, outputs and intermediates.
    std::map<std::pair<graph::ValueId, std::string>, int> weight_of_;
    std::vector<std::pair<int, int>> copies_; ///< (source tensor, output tensor)
    int64_t arena_bytes_ = 0;
};

} // namespace

std::optional<graph::DType> graph_dtype_of(int model_dtype) {
    return graph::dtype_from_abi(model_dtype);
}

runtime::ModelPlan make_model_plan(const ModelBuild& build, std::vector<uint8_t>& weights,
                                   const std::vector<std::string>& cubins,
                                   std::string* cubin_blob) {
    return PlanBuilder(build, weights, cubins, cubin_blob).build();
}

} // namespace tessera::compile
