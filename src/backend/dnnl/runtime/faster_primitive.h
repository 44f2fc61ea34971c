// Which of two oneDNN convolutions computing the same thing runs faster on this CPU, measured
// once per shape. oneDNN's Winograd convolution (AVX-512 only in oneDNN 2.6) takes 0.5-0.6x its
// direct one's time on most of ResNet's and GoogLeNet's 3x3 layers and up to 3.5x longer on
// others (7x7 maps, 3-channel inputs, some channel counts such as 96 -> 208 at 14x14), in ways
// no simple rule of the shape captures (docs/benchmarks.md, "oneDNN's Winograd convolution on
// AVX-512"): so the module times both at build.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

namespace partita::backend::dnnl {

/// Whether `candidate` ran in less than `margin` times `baseline`'s time here, each with the
/// reorders its layouts cost in a graph of baseline-chosen layouts: from `src` (the input's
/// layout now) to its own source layout, and from its destination layout to the baseline's
/// (where the next layer will likely want it). Each on zero-filled arguments, one warm-up, then
/// the best of `rounds` alternating runs. The answer is cached for the process under `key`, which must name everything that
/// decides the times (shapes, post-ops, threads, how `src` relates to the two layouts).
/// Thread-safe.
bool runs_faster(const ::dnnl::convolution_forward::primitive_desc& candidate,
                 const ::dnnl::convolution_forward::primitive_desc& baseline, const ::dnnl::memory::desc& src,
                 const std::string& key, ::dnnl::engine& eng, double margin, int rounds = 3);

}  // namespace partita::backend::dnnl
