// tessera_alloc / tessera_free: alignment, distinct live blocks, reuse of freed blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "tessera/runtime/alloc.h"

namespace {

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(Alloc, AlignedDistinctAndWritable) {
    std::vector<void*> live;
    std::set<void*> seen;
    for (int64_t bytes : {int64_t(0), int64_t(1), int64_t(7), int64_t(13), int64_t(127),
                          int64_t(4096), int64_t(1) << 20}) {
        void* p = tessera_alloc(bytes);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(aligned64(p)) << bytes;
        EXPECT_TRUE(seen.insert(p).second) << "two live blocks share an address";
        std::memset(p, 0x5a, static_cast<size_t>(bytes > 0 ? bytes : 1));
        live.push_back(p);
    }
    for (void* p : live) tessera_free(p);
    tessera_free(nullptr);
}

TEST(Alloc, FreedBlockIsReusedBySameSizeRequest) {
    void* a = tessera_alloc(131072);
    tessera_free(a);
    void* b = tessera_alloc(131072);
    EXPECT_EQ(a, b);
    // A much smaller request does not take a large cached block.
    tessera_free(b);
    void* c = tessera_alloc(64);
    EXPECT_NE(c, b);
    tessera_free(c);
}

TEST(Alloc, BlocksMayBeFreedOnAnotherThread) {
    std::vector<void*> blocks;
    for (int i = 0; i < 40; ++i) blocks.push_back(tessera_alloc(1000 + 13 * i));
    std::thread t([&] {
        for (void* p : blocks) tessera_free(p);
        // The other thread's cache serves its own requests.
        void* p = tessera_alloc(1000);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(aligned64(p));
        tessera_free(p);
    });
    t.join();
}

} // namespace
