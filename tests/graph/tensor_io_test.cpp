// .npy and TensorProto .pb files: round trips for every dtype, headers numpy writes, errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "graph_test_util.h"
#include "tessera/graph/tensor_io.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

class TensorIoTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("tessera_tensor_io_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    void write(const std::string& name, const std::string& bytes) const {
        std::ofstream(path(name), std::ios::binary) << bytes;
    }
    fs::path dir_;
};

TEST_F(TensorIoTest, NpyRoundTripsEveryDtype) {
    std::vector<TensorData> cases = {
        testing::random_tensor({2, 3, 5}, 1),
        TensorData::scalar(2.5f),
        testing::random_tensor({7}, 2).cast(DType::F64),
        testing::random_ints({1, 13}, 3, -100, 100),
        testing::random_ints({3, 1}, 4, -5, 5).cast(DType::I32),
        TensorData::from_vector<uint8_t>({4}, {1, 0, 0, 1}),
        TensorData(DType::F32, {0, 3}),
    };
    for (const DTypeInfo& d : all_dtypes()) // every dtype of the table, odd shape
        cases.push_back(testing::random_ints({3, 5}, 11, -200, 200).cast(d.dtype));
    cases.push_back(testing::random_tensor({7}, 12).cast(DType::F16));
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string p = path("t" + std::to_string(i) + ".npy");
        write_npy(p, cases[i]);
        // A void descr ('|V1': the narrow types) stands for the dtype its reader expects.
        EXPECT_EQ(npy_as(read_npy(p), cases[i].dtype()), cases[i]) << i;
        EXPECT_EQ(npy_as(read_tensor_file(p), cases[i].dtype()), cases[i]) << i;
        EXPECT_EQ(npy_bytes(cases[i]).compare(8, 12, std::string("\x76\x00{'descr': ", 12)), 0)
            << i; // version 1.0, then the header length and dict
        EXPECT_EQ((npy_bytes(cases[i]).size() - cases[i].nbytes()) % 64, 0u) << i;
    }
}

TEST_F(TensorIoTest, ReadsNumpyWrittenHeaders) {
    // Version 2 header, spaces as numpy writes them, and a 1-D shape "(3,)".
    std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
    header.append(64 - (12 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x02\x00", 8);
    uint32_t len = static_cast<uint32_t>(header.size());
    bytes.append(reinterpret_cast<const char*>(&len), 4);
    bytes += header;
    int64_t data[3] = {7, -8, 9};
    bytes.append(reinterpret_cast<const char*>(data), sizeof data);
    EXPECT_EQ(parse_npy(bytes, "v2"), testing::i64s({7, -8, 9}));
}

TEST_F(TensorIoTest, NarrowTypesFromMlDtypesHeaders) {
    // ml_dtypes saves float8_e5m2 as '<f1' and the other narrow types as '<V1': the model
    // input's dtype (npy_as) says which the bytes are.
    TensorData e5m2 = testing::random_tensor({3, 5}, 7).cast(DType::F8E5M2);
    std::string bytes = npy_bytes(e5m2);
    bytes.replace(bytes.find("|V1"), 3, "<f1");
    EXPECT_EQ(npy_as(parse_npy(bytes, "e5m2"), DType::F8E5M2), e5m2);
    TensorData i4 = testing::random_ints({7}, 8, -8, 7).cast(DType::I4);
    bytes = npy_bytes(i4);
    bytes.replace(bytes.find("|V1"), 3, "<V1");
    EXPECT_EQ(npy_as(parse_npy(bytes, "i4"), DType::I4), i4);
}

TEST_F(TensorIoTest, NpyErrorsNameTheFile) {
    auto error_of = [&](const std::string& name, const std::string& bytes) -> std::string {
        write(name, bytes);
        try {
            read_npy(path(name));
        } catch (const UserError& e) {
            return e.what();
        }
        return "no error";
    };
    std::string good = npy_bytes(testing::random_tensor({2, 3}, 5));
    EXPECT_NE(error_of("magic.npy", "PK\x03\x04 not numpy").find("magic.npy' is not a .npy file"),
              std::string::npos);
    EXPECT_NE(error_of("short.npy", good.substr(0, good.size() - 4))
                  .find("short.npy': .npy data has 20 bytes"),
              std::string::npos);
    std::string fortran = good;
    fortran.replace(fortran.find("False"), 5, "True ");
    EXPECT_NE(error_of("f.npy", fortran).find("f.npy': Fortran-order"), std::string::npos);
    std::string big = good;
    big.replace(big.find("<f4"), 3, ">f4");
    EXPECT_NE(error_of("big.npy", big).find("big.npy': unsupported .npy dtype '>f4'"),
              std::string::npos);
    std::string complex = good;
    complex.replace(complex.find("<f4"), 3, "<c8");
    EXPECT_NE(error_of("c.npy", complex).find("unsupported .npy dtype '<c8'"), std::string::npos);
    try {
        read_npy(path("missing.npy"));
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot open .npy file"), std::string::npos);
    }
    EXPECT_THROW(write_npy(path("no/such/dir/x.npy"), TensorData()), UserError);
    EXPECT_THROW(read_tensor_file(path("x.txt")), UserError);
}

TEST_F(TensorIoTest, TensorProtoFilesRawAndTyped) {
    std::vector<TensorData> cases = {testing::random_tensor({3, 5}, 6),
                                     testing::random_ints({4}, 7, -9, 9),
                                     TensorData::from_vector<uint8_t>({3}, {0, 1, 1}),
                                     testing::random_tensor({2}, 8).cast(DType::F64),
                                     testing::random_ints({2}, 9, -9, 9).cast(DType::I32),
                                     testing::random_tensor({5}, 10).cast(DType::F16)};
    for (const DTypeInfo& d : all_dtypes()) // each typed field of ONNX's
        cases.push_back(testing::random_ints({3}, 11, -200, 200).cast(d.dtype));
    for (bool typed : {false, true}) {
        for (const TensorData& t : cases) {
            const std::string p = path("t.pb");
            write("t.pb", testing::tensor_proto("t", t, typed).SerializeAsString());
            EXPECT_EQ(read_tensor_pb(p), t) << typed << " " << dtype_name(t.dtype());
        }
    }
    onnx::TensorProto p = testing::tensor_proto("bad", testing::random_tensor({3, 5}, 6));
    p.mutable_raw_data()->resize(12);
    write("bad.pb", p.SerializeAsString());
    try {
        read_tensor_pb(path("bad.pb"));
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("bad.pb': raw_data has 12 bytes"), std::string::npos)
            << e.what();
    }
    p = testing::tensor_proto("complex", testing::random_tensor({2}, 6));
    p.set_data_type(onnx::TensorProto::COMPLEX64);
    write("complex.pb", p.SerializeAsString());
    try {
        read_tensor_pb(path("complex.pb"));
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("unsupported element type complex64"),
                  std::string::npos)
            << e.what();
    }
    write("junk.pb", "\xff\xff\xff\xff garbage");
    EXPECT_THROW(read_tensor_pb(path("junk.pb")), UserError);
}

} // namespace
} // namespace tessera::graph
