// The loop nest of the blocked word-product convolutions' evaluators (QConvBlocked on words of
// four bytes, ConvBF16Blocked on words of two bf16 values): one definition of which input word
// and which weight meet for an output element, each op bringing its product and its epilogue.
#pragma once

#include <cstdint>

#include "../op_util.h"

namespace tessera::graph::detail {

/// Extents of a blocked convolution over words: input [N, CB, H, W, words] (padded already),
/// weights [KB, CB, R, S, words, B] (element [.., j, k] at word index * B + k), output
/// [N, KB, OH, OW, B].
struct BlockedConvWords {
    int64_t N = 0, CB = 0, H = 0, W = 0, words = 0;
    int64_t KB = 0, R = 0, S = 0, B = 0, OH = 0, OW = 0;
};

/// For every output element (row-major): acc = zero; acc = product(acc, x, w) for every
/// (cb, r, s, j), x the index of the input word (in words) and w that of the weight element;
/// then finish(acc, kb * B + k, output index). `win` gives strides and dilations (no pads).
template <typename Acc, typename Product, typename Finish>
void for_each_blocked_conv_output(const BlockedConvWords& d, const Window2d& win, Acc zero,
                                  Product product, Finish finish) {
    for (int64_t b = 0; b < d.N; ++b)
        for (int64_t kb = 0; kb < d.KB; ++kb)
            for (int64_t oh = 0; oh < d.OH; ++oh)
                for (int64_t ow = 0; ow < d.OW; ++ow)
                    for (int64_t k = 0; k < d.B; ++k) {
                        Acc acc = zero;
                        for (int64_t cb = 0; cb < d.CB; ++cb)
                            for (int64_t r = 0; r < d.R; ++r)
                                for (int64_t s = 0; s < d.S; ++s) {
                                    const int64_t h = oh * win.stride[0] + r * win.dilation[0];
                                    const int64_t v = ow * win.stride[1] + s * win.dilation[1];
                                    const int64_t x =
                                        (((b * d.CB + cb) * d.H + h) * d.W + v) * d.words;
                                    const int64_t w =
                                        (((kb * d.CB + cb) * d.R + r) * d.S + s) * d.words;
                                    for (int64_t j = 0; j < d.words; ++j)
                                        acc = product(acc, x + j, (w + j) * d.B + k);
                                }
                        finish(acc, kb * d.B + k,
                               (((b * d.KB + kb) * d.OH + oh) * d.OW + ow) * d.B + k);
                    }
}

/// For every weight (k, c, r, s) of an OIHW weight [K, C, R, S]: f(source index in OIHW order,
/// element index in the words [KB, CB, R, S, in_block / per_word, block] of `per_word` elements
/// each, element ci % per_word of word ci / per_word holding input channel ci of its block).
/// What the 8-bit (4 bytes a word) and bf16 (2 halves a word) weight packings share.
template <typename F>
void for_each_conv_weight_in_words(int64_t K, int64_t C, int64_t R, int64_t S, int64_t block,
                                   int64_t in_block, int64_t per_word, F f) {
    const int64_t CB = (C + in_block - 1) / in_block, words = in_block / per_word;
    for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s) {
                    const int64_t cb = c / in_block, ci = c % in_block;
                    const int64_t word =
                        ((((k / block) * CB + cb) * R + r) * S + s) * words * block +
                        (ci / per_word) * block + k % block;
                    f(((k * C + c) * R + r) * S + s, word * per_word + ci % per_word);
                }
}

} // namespace tessera::graph::detail
