// The small models of the zoo (models/zoo_small, written by scripts/export_zoo.py: a U-Net, a
// YOLO-style detector, a tiny BERT, a tiny GPT-2 and a Whisper encoder, from torch and
// transformers with seeded random weights) built untuned at -O3 into a library as `tessera
// build` does, run through the C API and compared with the stored ONNX Runtime outputs at the
// tolerance of the model's meta.json (rtol 1e-4, atol 1e-5 unless ONNX Runtime and torch differ
// by more). scripts/zoo_check.sh checks the whole zoo.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/model_library_loader.h"
#include "tessera/compile/model_compiler.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::LoadedModel;
using testing::outputs_match;
using testing::read_data_set;
using testing::ScratchDir;

std::string zoo_dir(const std::string& name) {
    return std::string(TESSERA_SOURCE_DIR) + "/models/zoo_small/" + name;
}

class ZooSmall : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooSmall, BuildsAndMatchesOnnxRuntime) {
    const std::string name = GetParam();
    const std::string dir = zoo_dir(name);
    ASSERT_TRUE(fs::exists(dir + "/model.onnx")) << dir;
    std::ifstream meta_file(dir + "/meta.json");
    ASSERT_TRUE(meta_file) << dir << "/meta.json";
    const nlohmann::json meta = nlohmann::json::parse(meta_file);
    const double rtol = meta.value("rtol", 1e-4);
    const double atol = meta.value("atol", 1e-5);
    EXPECT_LE(rtol, 1e-4);
    EXPECT_LE(atol, 1e-5) << "a looser tolerance than the zoo's default: " << meta.dump();

    ScratchDir scratch("tessera_zoo_" + name);
    compile::BuildOptions opts;
    opts.model_path = dir + "/model.onnx";
    opts.jobs = 1;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    const std::string so = scratch.file(name + ".so");
    compile::write_model_library(b, so, opts);

    LoadedModel m(so);
    m.set_num_threads(1);
    const auto inputs = read_data_set(dir, 0, "input");
    const auto ref = read_data_set(dir, 0, "output");
    ASSERT_EQ(inputs.size(), meta.at("inputs").size());
    ASSERT_EQ(ref.size(), meta.at("outputs").size());
    EXPECT_TRUE(outputs_match(m.run(inputs), ref, rtol, atol)) << name;
}

INSTANTIATE_TEST_SUITE_P(ZooSmallModels, ZooSmall,
                         ::testing::Values("unet", "yolo", "bert", "gpt2", "whisper_encoder"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

} // namespace
} // namespace tessera
