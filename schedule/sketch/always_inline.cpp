// Sketch rule always_inline (Ansor's RuleAlwaysInline): inline cheap elementwise stages.
#include "../internal/body_util.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class AlwaysInline : public SketchRule {
  public:
    explicit AlwaysInline(const SketchOptions& opts) : target_(opts.target) {}
    const char* name() const override { return "always_inline"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || s.is_output(stage) || st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !s.attached_stages(stage).empty())
            return RuleCondition::Skip;
        // A stage read as words must stay in memory (do_compute_inline refuses it).
        if (s.is_read_as_words(stage))
            return RuleCondition::Skip;
        // GPUs inline every injective stage (launches cost more than recomputation); CPUs
        // those whose reads are plain axis accesses without expensive math, the padding of a
        // pooling window, and a copy read only by stages that read each element once.
        const bool inline_it = target_ == TargetKind::Gpu
                                   ? s.is_injective(stage)
                                   : s.is_strict_inlinable(stage) || feeds_only_windows(s, stage) ||
                                         copy_into_maps(s, stage) || read_once_by_map(s, stage) ||
                                         reinterprets_input(s, stage);
        return inline_it ? RuleCondition::ApplyAndSkipRest : RuleCondition::Skip;
    }

    /// True for an injective stage read only by short window reductions that are not tiled
    /// and vectorize along a contiguous innermost axis (pools over NCHW[x]c): each element is
    /// recomputed a few times at most, and a root stage would write and read back a padded
    /// copy of the whole input (more memory traffic than the pool). Pools over NCHW keep the
    /// root stage, whose vector loop is the only one they get.
    static bool feeds_only_windows(const State& s, int stage) {
        if (!s.is_injective(stage))
            return false;
        const std::vector<int> readers = s.consumers(stage);
        if (readers.empty())
            return false;
        for (int c : readers) {
            const Stage& r = s.stages[c];
            if (!r.has_reduce() || s.needs_multi_level_tiling(c) ||
                s.reduce_size(c) > kMaxPoolWindow || r.axes.empty() ||
                !reads_along_last_axis(r.body, r.axes.back()))
                return false;
        }
        return true;
    }

    /// True for a stage that only moves elements (its body is one read, maybe converted: a
    /// Reshape, Transpose or Slice, whose indices may divide and take remainders) read only by
    /// stages without a reduction (the cast after an attention head's transpose). Inlined, the
    /// reader computes the same index and loads the same element once per element it writes,
    /// where a root stage would write a whole copy and read it back: one pass over memory
    /// instead of two. Its reads that cross a vector's lanes become gathers either way.
    static bool copy_into_maps(const State& s, int stage) {
        if (!s.is_injective(stage))
            return false;
        ir::Expr body = inline_lets(s.stages[stage].body);
        while (const auto* cast = body.as<ir::Cast>())
            body = cast->value;
        const auto* read = body.as<ir::TensorRead>();
        if (!read)
            return false;
        for (const ir::Expr& index : read->indices) {
            bool reads_tensor = false;
            for_each_read(index, [&](const ir::TensorRead*) { reads_tensor = true; });
            if (reads_tensor)
                return false; // a gather by data (an index tensor) stays a stage
        }
        const std::vector<int> readers = s.consumers(stage);
        if (readers.empty())
            return false;
        for (int c : readers)
            if (s.stages[c].has_reduce() || s.stages[c].is_input())
                return false;
        return true;
    }

    /// True for an elementwise stage with expensive math (a sigmoid) read once, at its own
    /// index, by its one reader, itself without a reduction (SiLU's multiply): inlined,
    /// nothing is computed twice, and the reader becomes the one epilogue stage that a conv's
    /// tile fuses into, instead of a root stage written and read back.
    static bool read_once_by_map(const State& s, int stage) {
        const Stage& st = s.stages[stage];
        const std::vector<int> readers = s.consumers(stage);
        if (!s.is_injective(stage) || readers.size() != 1)
            return false;
        const Stage& r = s.stages[readers[0]];
        if (r.has_reduce() || r.is_input() || !s.elementwise_match(stage, readers[0]))
            return false;
        int reads = 0;
        for_each_read(inline_lets(r.body), [&](const ir::TensorRead* read) {
            reads += read->tensor.same_as(st.tensor) ? 1 : 0;
        });
        return reads == 1;
    }

    /// True for a stage whose element [i..., j] is the word at its input's element [i..., 2j]
    /// or [i..., 4j] (a bf16 or u8 matrix's rows seen as the words a dot-product instruction
    /// takes): the words are the input's own bytes in their own order, so inlined its readers
    /// load them from the input, where a root stage copies the whole input each call. A
    /// reordering (a transpose into words by columns) stays a stage: its readers' vectors
    /// would gather.
    static bool reinterprets_input(const State& s, int stage) {
        const Stage& st = s.stages[stage];
        const auto* call = inline_lets(st.body).as<ir::Call>();
        if (!call || call->op != ir::CallOp::BytesAsWord || !s.is_injective(stage))
            return false;
        const auto* read = call->args[0].as<ir::TensorRead>();
        if (!read || read->indices.size() != st.axes.size() || st.axes.empty())
            return false;
        for (int p : s.producers(stage))
            if (!s.stages[p].is_input() || !s.stages[p].tensor.same_as(read->tensor))
                return false;
        const size_t last = st.axes.size() - 1;
        for (size_t d = 0; d < last; ++d)
            if (read->indices[d].as<ir::Variable>() != st.axes[d].get())
                return false;
        const auto* times = read->indices[last].as<ir::Mul>();
        const auto* per_word = times ? times->b.as<ir::IntImm>() : nullptr;
        return per_word && times->a.as<ir::Variable>() == st.axes[last].get() &&
               per_word->value * read->tensor.dtype().bytes() == 4 && !s.consumers(stage).empty();
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State next = s;
        compute_inline(next, stage);
        return {{std::move(next), stage - 1}};
    }

  private:
    TargetKind target_;
};

} // namespace

std::unique_ptr<SketchRule> make_always_inline_rule(const SketchOptions& opts) {
    return std::make_unique<AlwaysInline>(opts);
}

} // namespace tessera::sched
