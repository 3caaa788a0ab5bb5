// Internal: slot indices of a feature row, generated from feature_list.def (the one list).
// A row is the non-buffer features before the `buffer` block, the `buffer` block once per
// buffer B0..B4, then the non-buffer features after it.
#pragma once

namespace tessera::cost::layout {

/// One enumerator per entry of feature_list.def, in its order (the buffer block once).
enum class Feature : int {
#define TESSERA_FEATURE(name, group, meaning) name,
#include "feature_list.def"
    kEntries
};

/// The group of each entry, as written in feature_list.def.
inline constexpr const char* kEntryGroups[] = {
#define TESSERA_FEATURE(name, group, meaning) #group,
#include "feature_list.def"
};
/// The name and the meaning of each entry.
inline constexpr const char* kEntryNames[] = {
#define TESSERA_FEATURE(name, group, meaning) #name,
#include "feature_list.def"
};
inline constexpr const char* kEntryMeanings[] = {
#define TESSERA_FEATURE(name, group, meaning) meaning,
#include "feature_list.def"
};

inline constexpr int kNumEntries = static_cast<int>(Feature::kEntries);
/// Buffers described per store (Ansor's choice: the top five by traffic).
inline constexpr int kNumBuffers = 5;

constexpr bool same_text(const char* a, const char* b) {
    while (*a && *a == *b)
        ++a, ++b;
    return *a == *b;
}
constexpr bool is_buffer_entry(int e) { return same_text(kEntryGroups[e], "buffer"); }
constexpr int first_buffer_entry() {
    for (int e = 0; e < kNumEntries; ++e)
        if (is_buffer_entry(e))
            return e;
    return kNumEntries;
}
constexpr int num_buffer_entries() {
    int n = 0;
    for (int e = 0; e < kNumEntries; ++e)
        n += is_buffer_entry(e) ? 1 : 0;
    return n;
}
inline constexpr int kFirstBufferEntry = first_buffer_entry();
inline constexpr int kBufferEntries = num_buffer_entries();
inline constexpr int kRowLength = kNumEntries + (kNumBuffers - 1) * kBufferEntries;

constexpr bool buffer_block_is_contiguous() {
    for (int e = 0; e < kNumEntries; ++e)
        if (is_buffer_entry(e) !=
            (e >= kFirstBufferEntry && e < kFirstBufferEntry + kBufferEntries))
            return false;
    return true;
}
static_assert(buffer_block_is_contiguous(),
              "feature_list.def: the buffer entries must be one block");

/// Whether an entry is stored raw (its meaning starts with "one-hot", or it is an intensity)
/// rather than log2(1 + x).
constexpr bool is_raw_entry(int e) {
    const char* m = kEntryMeanings[e];
    const char* one_hot = "one-hot";
    while (*one_hot && *m == *one_hot)
        ++m, ++one_hot;
    return *one_hot == 0 || same_text(kEntryGroups[e], "intensity");
}

/// Row index of a non-buffer feature.
constexpr int slot(Feature f) {
    const int e = static_cast<int>(f);
    return e < kFirstBufferEntry ? e : e + (kNumBuffers - 1) * kBufferEntries;
}
/// Row index of buffer feature f of buffer b (0..kNumBuffers-1).
constexpr int buffer_slot(int b, Feature f) {
    return kFirstBufferEntry + b * kBufferEntries + (static_cast<int>(f) - kFirstBufferEntry);
}

} // namespace tessera::cost::layout
