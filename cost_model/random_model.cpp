// The random cost model: seeded uniform scores, for tests and the random-search baseline.
#include "tessera/cost_model/cost_model.h"

#include "model_blob.h"
#include "tessera/support/hash.h"

#include <cstring>

namespace tessera::cost {

namespace {

// A program's score is a hash of (seed, its feature values) mapped to [0, 1), so one program
// always gets the same score from one model, whatever batch it arrives in and in whatever
// order predict() is called; that keeps searches with this model reproducible.
class RandomModel : public CostModel {
  public:
    explicit RandomModel(uint64_t seed) : seed_(seed) {}

    std::string name() const override { return "random"; }

    void train(const std::vector<TrainingExample>& examples) override {
        num_trained_ = static_cast<int64_t>(examples.size());
    }

    std::vector<double> predict(const std::vector<ProgramFeatures>& programs) override {
        std::vector<double> scores;
        scores.reserve(programs.size());
        for (const ProgramFeatures& p : programs)
            scores.push_back(score(p));
        return scores;
    }

    std::vector<uint8_t> save() const override {
        detail::BlobWriter w(name());
        w.u64(seed_);
        w.i64(num_trained_);
        return w.take();
    }

    void load(const std::vector<uint8_t>& blob) override {
        detail::BlobReader r(blob, name());
        uint64_t seed = r.u64();
        int64_t num_trained = r.i64();
        r.expect_end();
        seed_ = seed;
        num_trained_ = num_trained;
    }

    int64_t num_trained() const override { return num_trained_; }

  private:
    double score(const ProgramFeatures& p) const {
        uint64_t h = hash_combine(seed_, p.rows.size());
        for (const std::vector<float>& row : p.rows) {
            h = hash_combine(h, row.size());
            for (float v : row) {
                uint32_t bits;
                std::memcpy(&bits, &v, sizeof bits);
                h = hash_combine(h, bits);
            }
        }
        return static_cast<double>(h >> 11) * 0x1.0p-53; // the top 53 bits, uniform in [0, 1)
    }

    uint64_t seed_;
    int64_t num_trained_ = 0;
};

} // namespace

std::unique_ptr<CostModel> make_random_model(uint64_t seed) {
    return std::make_unique<RandomModel>(seed);
}

} // namespace tessera::cost
