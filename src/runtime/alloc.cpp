// Aligned heap memory for generated code, with a small per-thread cache of freed blocks.
//
// Why a cache: a scheduled kernel allocates its packing buffers and per-tile caches on every
// call (and per parallel iteration). Large blocks from malloc are fresh mmap pages each time
// unless glibc's adaptive threshold happens to have moved, so the same kernel ran up to 20%
// slower in one process than in another, depending on the process's malloc history. Reusing a
// thread's recently freed blocks makes a kernel's cost independent of that history.
#include "tessera/runtime/alloc.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/// Every block starts with one 64-byte header holding its usable size, so tessera_free knows
/// the size and the data stays 64-byte aligned.
constexpr size_t kHeader = 64;
constexpr size_t kMaxCachedBlocks = 16;
constexpr size_t kMaxCachedBytes = size_t(64) << 20; // per thread

struct Block {
    size_t bytes;
    char* base;
};

/// The freed blocks of this thread, most recent last.
struct BlockCache {
    std::vector<Block> blocks;
    size_t bytes = 0;
    ~BlockCache() {
        for (const Block& b : blocks) std::free(b.base);
    }
};

thread_local BlockCache cache;

void* data_of(char* base, size_t bytes) {
    std::memcpy(base, &bytes, sizeof bytes);
    return base + kHeader;
}

} // namespace

extern "C" void* tessera_alloc(int64_t bytes) {
    // A zero-byte request still gets a block so that distinct allocations never compare equal.
    const size_t rounded = bytes <= 0 ? 64 : (static_cast<size_t>(bytes) + 63) / 64 * 64;
    // Best fit among the cached blocks no more than twice the size (no large block is wasted
    // on a small request).
    size_t best = cache.blocks.size();
    for (size_t i = 0; i < cache.blocks.size(); ++i) {
        const size_t have = cache.blocks[i].bytes;
        if (have >= rounded && have <= 2 * rounded &&
            (best == cache.blocks.size() || have < cache.blocks[best].bytes))
            best = i;
    }
    if (best != cache.blocks.size()) {
        const Block b = cache.blocks[best];
        cache.blocks.erase(cache.blocks.begin() + static_cast<std::ptrdiff_t>(best));
        cache.bytes -= b.bytes;
        return b.base + kHeader;
    }
    char* base = static_cast<char*>(std::aligned_alloc(64, rounded + kHeader));
    return base ? data_of(base, rounded) : nullptr;
}

extern "C" void tessera_free(void* p) {
    if (!p) return;
    char* base = static_cast<char*>(p) - kHeader;
    size_t bytes = 0;
    std::memcpy(&bytes, base, sizeof bytes);
    if (bytes > kMaxCachedBytes) {
        std::free(base);
        return;
    }
    // Keep the most recent blocks: evict the oldest until the new one fits.
    while (!cache.blocks.empty() && (cache.blocks.size() >= kMaxCachedBlocks ||
                                     cache.bytes + bytes > kMaxCachedBytes)) {
        std::free(cache.blocks.front().base);
        cache.bytes -= cache.blocks.front().bytes;
        cache.blocks.erase(cache.blocks.begin());
    }
    cache.blocks.push_back({bytes, base});
    cache.bytes += bytes;
}
