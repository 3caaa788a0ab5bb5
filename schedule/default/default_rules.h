// Internal pieces of the rule-based default schedule (default_schedule.h): the fixed tile
// sizes of a sketch and the fixed parallel / unroll / vectorize annotation.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "tessera/ir/stmt.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/state.h"

namespace tessera::sched::detail {

/// The sketch's steps replayed from make_initial_state(sketch.compute) with fixed split
/// lengths instead of its placeholders: in a multi-level tiled stage the innermost spatial
/// level is a register tile of whole vectors along the sketch's innermost axis (the vector
/// axis) by a few rows of the innermost other axis of extent > 1 (the width axis), every
/// other spatial level 1, except a block axis that gives more vectors when the vector axis
/// is shorter than two (an NCHW[x]c convolution's channel blocks) or, when it is not, more
/// accumulators per loaded input vector (Winograd's tile positions), and a cache tile of rows in
/// the second level (for a GEMM-like stage, rows in the first level, outside the local buffer);
/// small reduce loops (kernel windows) lie whole inside the tile's reduce level, a GEMM-like
/// stage's long reduction keeps 4 steps there. Panel layouts get their reader's tile width.
/// Throws ScheduleError when a step is illegal with these lengths.
State fill_fixed_tile_sizes(const State& sketch, const DefaultScheduleOptions& opts);

/// The root axis (index into the stage's nodes: spatial axes, then reduce axes) that
/// iterator node `node` was split from, or -1 when it comes from a fuse.
int root_axis(const Stage& st, int node);
/// Every root axis that iterator node `node` comes from, through splits and fuses.
std::set<int> root_axes(const Stage& st, int node);
/// The root axis of st's innermost spatial loop, the one the default schedule vectorizes (the
/// sketch rules put the weight's axis or the contiguous axis there); -1 when it has none or it
/// comes from a fuse.
int vector_axis(const Stage& st);

/// Whether st's default cache tile repeats its register tile over rows outside the tile's
/// local buffer (a serial loop around it, each row accumulating its whole reduction in
/// registers; fixed_tile_sizes.cpp): GEMM-like stages (a reduction of at least 128 steps
/// without a kernel window: matmul, dense, 1x1 convolution), and windows with a reduction
/// outside the window (a conv's input channels) in a tile of whole vectors. Their parallel
/// loops then take fewer iterations, leaving the rows serial.
bool tiles_rows_outside_local(const Stage& st, const DefaultScheduleOptions& opts);
/// The reduce axis (its node) that st's register tile takes whole into its inner reduce level
/// for annotate_fixed to unroll (a 1x1 NCHW[x]c conv's channel block), or -1.
int whole_reduce_axis(const Stage& st, const DefaultScheduleOptions& opts);
/// Whether st reduces over a kernel window: a reduce loop of 2 to 7 steps that slides over a
/// spatial axis of some read (a 3x3 convolution's ry and rx, not a short channel loop).
bool has_window(const Stage& st);

/// Stores each weight (of `weight_inputs`, in the graph's layout) that a register tile reads
/// over several blocks of output channels in the order the tile reads it: the tile's blocks
/// next to the vector dimension, the reduce dimensions in the order of the tile's reduce
/// loops (an NCHW[x]c conv's [KB][CB][R][S][c][k] filters as [KB/b][CB][c][R][S][b][k]),
/// prepared outside the call. A weight it cannot order keeps its layout
/// (weights_in_tile_order.cpp).
void order_weights_for_tiles(State& s, const std::vector<int>& weight_inputs);

/// The spatial axes of st that a select condition of its body tests (an inlined padding's
/// borders), one flag per axis.
std::vector<bool> guarded_axes(const Stage& st);

/// The first of root stage `holder`'s leading spatial loops (unannotated, outermost first) over
/// an axis that the guards of an inlined producer test where the holder, or a stage of its
/// shape computed inside it, reads it (an inlined padding's rows).
struct GuardedLoop {
    int loop = -1;                  ///< Its index in the holder's iterators; -1: none.
    int64_t iterations_outside = 0; ///< The iterations of the loops outside it (0: none).
};
GuardedLoop first_guarded_loop(const State& s, int holder);

/// Inlines each intermediate that one tiled stage reads slice by slice (a depthwise conv's
/// padded input) when the reader's tiles together read at most twice its size (the halo):
/// the reader reads the image itself instead of a whole padded copy going through memory;
/// computed in the outer tile loop when it cannot be inlined. Before annotate_fixed; a move
/// that does not apply is left out (sliced_producers.cpp). A padding that the reader's vector
/// lanes cross is inlined too when the reader steps one element per lane along rows of at
/// least 7 vectors and the loops outside its tested rows give at least 4 x num_cores
/// iterations (annotate_fixed keeps those rows serial); otherwise it is padded a band of rows
/// at a time.
void inline_sliced_producers(State& s, const DefaultScheduleOptions& opts);

/// Splits the row loop of root stage `holder` into one chunk per core, outermost, so that
/// each thread reads the rows the previous task's thread wrote, when the task's activations
/// outweigh its weights and the loop the threads split now is a weight axis (output channel
/// blocks); without an even split, sorts the outer loops rows first when the weights are small.
/// No-op for num_cores < 2 or when nothing applies. Called by annotate_fixed before the
/// parallel loops are fused (outer_loops_for_threads.cpp).
void order_outer_loops_for_threads(State& s, int holder, const std::vector<int>& weight_inputs,
                                   int num_cores);

/// Moves the first serial loop over an outer axis of root stage `holder`'s output that lies
/// inside a loop over an inner axis (a cache tile's rows inside its column tiles) just outside
/// that loop, among the loops outside the holder's reductions and attached stages, so that the
/// nest writes its output row by row (rows_in_memory_order.cpp). No-op when no such pair
/// exists. Called by annotate_fixed after the parallel loops are fused.
void order_rows_before_columns(State& s, int holder);

/// Factors each plain reduction along its input's contiguous last axis (a row: softmax's max
/// and sum, layer norm's moments) by the vector width: a stage computed per row accumulates
/// one vector of partials, the original reduces its lanes. Before annotate_fixed (which
/// vectorizes the partials); a reduction it cannot factor stays as it is
/// (vector_row_reductions.cpp).
void factor_row_reductions(State& s, const DefaultScheduleOptions& opts);

/// Adds the fixed annotation to a filled state (no compute location changes): the outer
/// spatial loops of each root stage with at least 4096 loop iterations fused and parallel up
/// to 16 x num_cores iterations (a GEMM-like stage's up to 4 x num_cores, so that its rows of
/// tiles stay a serial loop whose partial last tile is peeled), pragma
/// auto_unroll_max_step (512 on tiled stages, 144 x the lanes on window tiles without a
/// partial last tile, 16 on other reductions), the register tile's
/// vector axis split into vector-wide parts (vectorized, the outer part unrolled), and the
/// innermost contiguous loop of untiled stages split by the vector width and vectorized.
/// Throws ScheduleError when a step is illegal.
void annotate_fixed(State& s, const DefaultScheduleOptions& opts);

/// `tiled` (a default schedule from the sketches) with its stage of word products, a sum of
/// dot4_u8s8(A, B) (when opts.cpu_tiles) or dot2_bf16(A, B) (opts.cpu_tiles_bf16), re-cut
/// for matrix tiles: tiles of up to 16 rows (the innermost axis only A
/// reads) by up to 16 columns (the innermost axis, only B reads), a second tile of each from
/// the same axis when it is longer (a matmul's) or else from the next axis of that kind (a
/// convolution's output rows and channel blocks); the loop order S0 S1 R0 R1 S2 S3 with the
/// words loop innermost (16 words per step when longer, the rest around the tile), the nest
/// annotated tile_matmul from its outermost loop of more than one step (not vectorized, not
/// unrolled; the stage's later vector splits dropped). nullopt when the stage is absent, the
/// steps do not have the tiled shape, or the result does not lower to a TileMatmul
/// (tile_matmul_schedule.cpp).
std::optional<State> tile_matmul_schedule(const State& tiled, const DefaultScheduleOptions& opts);

/// Inlines every stage of s that is not an output and is strictly inlinable (elementwise,
/// read one to one), last stage first.
void inline_strict_stages(State& s);

/// The schedule of a 2-D transform done in two 1-D passes (the Winograd input and output
/// transforms), when `c` is one: a first pass P read only by a second pass Y, once, either at
/// P[u / U, v / V, ..., c] (input form) or at P[..., f(y / m, x / m), x % m, ...] (output form),
/// maybe followed by one elementwise output stage. Y's loops run over the rows of tiles in
/// parallel, with P's slice for each computed inside (a register tile over the axis its data
/// read does not use) instead of all of P at the root. nullopt when `c` does not have that
/// shape or a step is refused (separable_transform_schedule.cpp).
std::optional<State> separable_transform_schedule(const te::Compute& c,
                                                  const DefaultScheduleOptions& opts);

/// Blocks a GPU default schedule wants in its grid before its tiles grow: one per SM of a
/// 132-SM device (H100, H200), so that no SM idles; beyond that, larger tiles (more reuse per
/// load) pay more than more blocks.
constexpr int64_t kGpuMinBlocks = 132;

/// s lowered for a GPU (LowerOptions::gpu). Throws ScheduleError unless s fits `limits`
/// (gpu_limit_violation) and lowers (any failure of the lowering counts, so that a candidate
/// tripping an internal check falls back).
ir::LoweredFunc check_gpu(const State& s, const GpuSampleOptions& limits);

/// The tensor-core schedule of c when c is one matrix product the tensor cores take (f16
/// operands summed in f32, or f32 operands with opts.gpu_tf32) with whole 16 x 8 x k tiles:
/// warp_mma nests over shared copies (gpu_tensor_core_schedule.cpp); nullopt otherwise or when
/// no tile config fits opts.gpu and lowers to WarpMma statements.
std::optional<State> gpu_tensor_core_schedule(const te::Compute& c,
                                              const DefaultScheduleOptions& opts);

/// The GPU default schedule (default_schedule.h, target Gpu); gpu_default_schedule.cpp.
State gpu_default_schedule(const te::Compute& c, const DefaultScheduleOptions& opts);

} // namespace tessera::sched::detail
