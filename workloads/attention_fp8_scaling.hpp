#pragma once
// fp8 attention's scaling recipe (the fp8 scaling block of kernels/attention_engine.hpp): per-tensor scales,
// powers of two (so descale = 1 / scale is exact), delayed: a tensor's scale comes from the amax that an
// earlier call produced, as Transformer Engine's delayed scaling does (an amax history of one, margin 0).
// Before any call has run, the scales come from bounds the tensors cannot exceed; one calibration pass
// (forward and backward) then replaces them with the scales of the measured amax.
#include <vector>

#include "kernels/attention_engine.hpp"

namespace fb::workloads {

// The largest power of two s with amax · s ≤ 448 (e4m3's largest finite value); 1 for an amax that is
// zero, negative or not finite (nothing measured yet).
float fp8_scale_for_amax(double amax);

// Largest magnitudes each tensor can reach when every input element (Q, K, V, dO) is at most `input_amax`
// in magnitude (a): P ≤ 1; |O| ≤ a (a convex combination of value rows); |dP| ≤ scale · 2 · dv · a²
// (|dO·V_j| and |D| = |dO·O| are each at most dv · a²); |dQ| ≤ scale · 2 · dv · a³ (P sums to 1 over the
// keys); |dK| ≤ g · seq · scale · 2 · dv · a³ and |dV| ≤ g · seq · a, summed over at most seq queries of the
// g = heads / kv_heads query heads sharing the key. Indexed by Fp8Tensor; 0 for the inputs.
std::vector<double> fp8_attention_bounds(const kernels::AttentionShape& s, double input_amax);

// The scaling block before any call: the inputs hold their values unscaled (scale 1), every produced
// tensor the scale of its bound (fp8_attention_bounds), every amax 0.
std::vector<float> fp8_initial_scaling(const kernels::AttentionShape& s, double input_amax);

// Sets the scale and descale of every produced tensor (S, O, dP, dQ, dK, dV) from the amax in `block`
// (kFp8ScalingFloats floats), leaving a tensor whose amax is not positive as it was.
void fp8_calibrate(std::vector<float>& block);

}  // namespace fb::workloads
