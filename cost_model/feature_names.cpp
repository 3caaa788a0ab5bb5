// The feature layout: version, row length and names, all derived from feature_list.def.
#include "tessera/cost_model/features.h"

#include "feature_layout.h"

namespace tessera::cost {

const int kFeatureLayoutVersion = 1;

int num_features() { return layout::kRowLength; }

const std::vector<FeatureInfo>& feature_info() {
    static const std::vector<FeatureInfo> info = [] {
        std::vector<FeatureInfo> out;
        out.reserve(layout::kRowLength);
        auto add = [&](int e, const std::string& prefix) {
            out.push_back({prefix + layout::kEntryNames[e], layout::kEntryGroups[e],
                           layout::kEntryMeanings[e], !layout::is_raw_entry(e)});
        };
        for (int e = 0; e < layout::kNumEntries; ++e) {
            if (e == layout::kFirstBufferEntry) // the buffer block, once per buffer
                for (int b = 0; b < layout::kNumBuffers; ++b)
                    for (int k = 0; k < layout::kBufferEntries; ++k)
                        add(layout::kFirstBufferEntry + k, "B" + std::to_string(b) + ".");
            if (!layout::is_buffer_entry(e))
                add(e, "");
        }
        return out;
    }();
    return info;
}

const std::vector<std::string>& feature_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const FeatureInfo& f : feature_info())
            out.push_back(f.name);
        return out;
    }();
    return names;
}

} // namespace tessera::cost
