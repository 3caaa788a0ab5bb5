// Host buffers (filling, comparison, raw files) and the worker protocol's JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "tessera/support/error.h"
#include "tessera/tuner/host_buffer.h"
#include "tessera/tuner/runner.h"

namespace tessera::tune {
namespace {

using ir::DataType;

TEST(HostBuffer, ElementErrorIsRelativeAboveOneAndHandlesNanAndInf) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    EXPECT_DOUBLE_EQ(element_error(1.5, 1.0), 0.5);
    EXPECT_DOUBLE_EQ(element_error(0.25, 0.5), 0.25); // below 1: absolute
    EXPECT_DOUBLE_EQ(element_error(-30, -20), 0.5);
    EXPECT_EQ(element_error(nan, nan), 0);
    EXPECT_TRUE(std::isinf(element_error(nan, 1)));
    EXPECT_TRUE(std::isinf(element_error(1, nan)));
    EXPECT_EQ(element_error(INFINITY, INFINITY), 0);
    EXPECT_TRUE(std::isinf(element_error(-INFINITY, INFINITY)));
}

TEST(HostBuffer, FillRandomIsSeededAndNotZero) {
    for (int64_t n : {1, 7, 13, 127})
        for (DataType t : {DataType::f32(), DataType::bf16(), DataType::f16()}) {
            HostBuffer a(t, n), b(t, n);
            Rng ra(3), rb(3);
            fill_random(a, ra);
            fill_random(b, rb);
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
            bool nonzero = false;
            for (int64_t i = 0; i < n; ++i) {
                double v = element_as_double(a, i);
                EXPECT_GE(v, -1);
                EXPECT_LT(v, 1);
                nonzero = nonzero || v != 0;
            }
            EXPECT_TRUE(nonzero);
        }
    HostBuffer h(DataType(DataType::Code::Int, 16), 3); // no host data of 16-bit integers
    Rng r(1);
    EXPECT_THROW(fill_random(h, r), UserError);
}

TEST(HostBuffer, CompareFindsTheWorstElementAndUnwrittenOnes) {
    HostBuffer want(DataType::f32(), 13), got(DataType::f32(), 13);
    Rng rng(9);
    fill_random(want, rng);
    std::memcpy(got.data(), want.data(), want.bytes());
    EXPECT_EQ(compare_outputs(got, want).max_error, 0);
    static_cast<float*>(got.data())[12] += 0.5f;
    Comparison c = compare_outputs(got, want);
    EXPECT_EQ(c.worst_index, 12);
    EXPECT_NEAR(c.max_error, 0.5, 1e-6);

    poison(got); // an output nobody wrote
    c = compare_outputs(got, want);
    EXPECT_TRUE(std::isinf(c.max_error));

    HostBuffer other(DataType::f32(), 7);
    EXPECT_THROW(compare_outputs(other, want), UserError);
}

TEST(HostBuffer, EightBitOutputsMayDifferByOneStep) {
    // u8 and i8 outputs are quantized: one rounding step of difference is no error, two are.
    for (const DataType t : {DataType::u8(), DataType(DataType::Code::Int, 8)}) {
        HostBuffer want(t, 11), got(t, 11);
        for (int i = 0; i < 11; ++i)
            static_cast<uint8_t*>(want.data())[i] = static_cast<uint8_t>(40 + 7 * i);
        std::memcpy(got.data(), want.data(), want.bytes());
        static_cast<uint8_t*>(got.data())[3] += 1;
        static_cast<uint8_t*>(got.data())[8] -= 1;
        EXPECT_EQ(compare_outputs(got, want).max_error, 0) << to_string(t);
        static_cast<uint8_t*>(got.data())[5] += 2;
        const Comparison c = compare_outputs(got, want);
        EXPECT_EQ(c.worst_index, 5) << to_string(t);
        EXPECT_GT(c.max_error, 0) << to_string(t);
    }
    // Other integers are exact.
    HostBuffer want(DataType::i32(), 5), got(DataType::i32(), 5);
    Rng rng(3);
    fill_random(want, rng);
    std::memcpy(got.data(), want.data(), want.bytes());
    static_cast<int32_t*>(got.data())[2] += 1;
    EXPECT_GT(compare_outputs(got, want).max_error, 0);
}

TEST(HostBuffer, RawFilesRoundTrip) {
    const std::string path = ::testing::TempDir() + "/host_buffer_raw.bin";
    HostBuffer a(DataType::i32(), 127);
    Rng rng(4);
    fill_random(a, rng);
    write_raw_file(path, a);
    HostBuffer b = read_raw_file(path, DataType::i32());
    ASSERT_EQ(b.num_elements(), 127);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
    EXPECT_THROW(read_raw_file(path, DataType::f64()), UserError); // 508 bytes: not whole f64s
    std::filesystem::remove(path);
    EXPECT_THROW(read_raw_file(path, DataType::i32()), UserError);
}

// Large buffers start on a 2 MiB boundary (huge pages where the system gives them), small
// ones on a page; both hold their data, survive a move and can be made read-only.
TEST(HostBuffer, LargeBuffersAreAlignedForHugePages) {
    for (int64_t n : {int64_t{1000}, int64_t(kHugeBufferBytes / 4), int64_t{3} << 20}) {
        HostBuffer a(DataType::f32(), n);
        const auto address = reinterpret_cast<uintptr_t>(a.data());
        EXPECT_EQ(address % (a.bytes() >= int64_t(kHugeBufferBytes) ? kHugePageBytes : 4096), 0u)
            << n;
        EXPECT_GE(a.mapped_bytes(), a.bytes());
        EXPECT_EQ(a.mapped_bytes() % 4096, 0) << n;
        Rng rng{static_cast<uint64_t>(n)};
        fill_random(a, rng);
        const float last = static_cast<const float*>(a.data())[n - 1];
        HostBuffer b = std::move(a);
        b.make_read_only();
        EXPECT_EQ(static_cast<const float*>(b.data())[n - 1], last) << n;
        EXPECT_NE(last, 0.0f) << n;
    }
}

TEST(RunProtocol, RequestAndReplyRoundTrip) {
    RunRequest q;
    q.library = "/tmp/x.so";
    q.symbol = "k";
    q.params = {RunParam{"/tmp/a.bin", 0, "", ""}, RunParam{"", 28, "f32", "/tmp/ref.bin"}};
    q.tolerance = 1e-4;
    q.threads = 3;
    q.warmup = 2;
    q.min_repeats = 7;
    q.min_repeat_secs = 0.5;
    q.max_repeats = 13;
    q.flush_cache = true;
    q.params[0].cold = true;
    RunRequest q2 = RunRequest::from_json(q.to_json());
    EXPECT_TRUE(q2.params[0].cold);
    EXPECT_EQ(q2.to_json(), q.to_json());
    EXPECT_EQ(q2.params[1].bytes, 28);
    EXPECT_EQ(q2.params[1].reference, "/tmp/ref.bin");
    EXPECT_EQ(q2.params[0].file, "/tmp/a.bin");

    RunReply r;
    r.error = MeasureError::WrongAnswer;
    r.error_message = "bad";
    r.max_rel_error = INFINITY; // JSON has no infinity
    RunReply r2 = RunReply::from_json(r.to_json());
    EXPECT_EQ(r2.error, MeasureError::WrongAnswer);
    EXPECT_EQ(r2.error_message, "bad");
    EXPECT_TRUE(std::isinf(r2.max_rel_error));

    EXPECT_THROW(RunRequest::from_json("{\"library\": 1}"), UserError);
    EXPECT_THROW(RunReply::from_json("{\"error\": \"nonsense\", \"run_secs\": []}"), UserError);
}

} // namespace
} // namespace tessera::tune
