#!/usr/bin/env python3
"""Writes tests/data/torch_golden.json: PyTorch's answers for the host kernels the training step runs, so that
tests/unit/torch_golden_test.cpp checks them against the framework users train with (and, through the GPU
tests that hold the cuda kernels to the host ones, the cuda kernels too), in CI, where no torch is installed.

Every input is random fp32 (seeded, never zero); PyTorch computes in float64 from those exact values, on the
CPU, through its own operators and autograd:
  rmsnorm     F.rms_norm of x + delta, its backward (autograd), plus the residual gradient; also at a mean
              square about eps
  rope        rotate-half RoPE as Hugging Face's Llama applies it (apply_rotary_pos_emb), full and partial,
              and the rotation back
  attention   F.scaled_dot_product_attention, causal, GQA (K/V repeated per group) and MLA's wider Q/K
              heads, forward (O and the log-sum-exp stats) and backward (dQ, dK, dV by autograd)
  activation  F.silu(gate) * up (SwiGLU) and F.gelu(approximate="tanh"), forward and backward
  adamw       torch.optim.AdamW, three steps with weight decay (bias correction at steps 1..3); also with
              eps beside the moments' square root and scaled gradients
  embedding   F.embedding and its backward (repeated ids add up); a vocabulary-parallel shard of the table
  route       softmax over experts, torch.topk, weights renormalised over the k; the backward of the
              weights with respect to the logits (autograd)
  softmax     the blocked-GEMM attention's causal softmax of scaled score strips (torch.softmax with the
              causal mask, queries offset into the sequence) and its backward (autograd)
  moe         the expert-major permutation (a stable torch.argsort of the expert ids), the weighted combine
              of the experts' rows back to tokens, and its gradients for the rows and the routing weights

  python3 scripts/torch_golden.py [-o tests/data/torch_golden.json]

Needs torch (any recent version; no GPU). The file records the torch version that wrote it.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F


def fp32s(t):
    """Inputs: fp32 values, printed with the 9 significant digits that read back as the same fp32."""
    return [float("%.9g" % v) for v in t.detach().reshape(-1).tolist()]


def rand(gen, *shape, lo=-2.0, hi=2.0):
    """fp32 values in [lo, hi), none zero, returned as float64 holding those exact fp32 values."""
    x = torch.rand(*shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
    x = torch.where(x == 0, torch.full_like(x, 0.5), x)
    return x.double()


def flat(t):
    """Answers: float64, to 12 significant digits (the tests allow fp32's error, 1e-6 and more)."""
    return [float("%.12g" % v) for v in t.detach().reshape(-1).tolist()]


def rmsnorm(gen, scale):
    """scale 1, and 3e-3, where the mean square is about eps (the epsilon's place then shows)."""
    rows, width, eps = 6, 48, 1e-5
    x, delta = (rand(gen, rows, width, lo=-2 * scale, hi=2 * scale) for _ in range(2))
    dy, d_res = (rand(gen, rows, width) for _ in range(2))
    gamma = rand(gen, width, lo=0.5, hi=1.5)
    s = (x + delta).requires_grad_()
    g = gamma.clone().requires_grad_()
    y = F.rms_norm(s, (width,), g, eps)
    y.backward(dy)
    rstd = torch.rsqrt(s.detach().pow(2).mean(-1) + eps)
    return {"rows": rows, "width": width, "eps": eps, "x": fp32s(x), "delta": fp32s(delta), "gamma": fp32s(gamma),
            "dy": fp32s(dy), "d_residual": fp32s(d_res), "sum": flat(s), "y": flat(y), "rstd": flat(rstd),
            "dx": flat(s.grad + d_res), "d_gamma": flat(g.grad)}


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(gen, rot_dim):
    batch, seq, heads, head_dim, theta = 2, 5, 3, 16, 10000.0
    x = rand(gen, batch * seq, heads, head_dim)
    # inv_freq rounded to fp32 as the kernels keep it (Hugging Face's Llama computes it in fp32), then the
    # rotation in float64.
    inv_freq = (1.0 / (theta ** (torch.arange(0, rot_dim, 2, dtype=torch.int64).double() / rot_dim))).float()
    pos = torch.arange(seq, dtype=torch.float64).repeat(batch)  # row t is at position t mod seq
    freqs = torch.outer(pos, inv_freq.double())
    emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]
    part = x[..., :rot_dim]
    out, back = x.clone(), x.clone()
    out[..., :rot_dim] = part * emb.cos() + rotate_half(part) * emb.sin()
    back[..., :rot_dim] = part * emb.cos() - rotate_half(part) * emb.sin()  # the rotation back (backward)
    return {"rows": batch * seq, "seq": seq, "heads": heads, "head_dim": head_dim, "rot_dim": rot_dim,
            "theta": theta, "x": fp32s(x), "y": flat(out), "y_inverse": flat(back)}


def attention(gen, batch, seq, heads, kv_heads, head_dim, value_dim):
    scale = 1.0 / math.sqrt(head_dim)
    q = rand(gen, batch, seq, heads, head_dim, lo=-1, hi=1)
    k = rand(gen, batch, seq, kv_heads, head_dim, lo=-1, hi=1)
    v = rand(gen, batch, seq, kv_heads, value_dim, lo=-1, hi=1)
    d_o = rand(gen, batch, seq, heads, value_dim, lo=-1, hi=1)
    qt, kt, vt = (t.clone().transpose(1, 2).requires_grad_() for t in (q, k, v))  # [B, H, S, D]
    group = heads // kv_heads
    o = F.scaled_dot_product_attention(qt, kt.repeat_interleave(group, dim=1), vt.repeat_interleave(group, dim=1),
                                       is_causal=True, scale=scale)
    o.backward(d_o.transpose(1, 2))
    scores = scale * qt.detach() @ kt.detach().repeat_interleave(group, dim=1).transpose(-1, -2)
    mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    stats = torch.logsumexp(scores.masked_fill(mask, -math.inf), dim=-1)  # [B, H, S]
    back = lambda t: flat(t.transpose(1, 2))  # [B, H, S, D] -> token rows [B, S, H, D]
    return {"batch": batch, "seq": seq, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "value_dim": value_dim,
            "scale": scale, "q": fp32s(q), "k": fp32s(k), "v": fp32s(v), "d_o": fp32s(d_o), "o": back(o),
            "stats": flat(stats), "dq": back(qt.grad), "dk": back(kt.grad), "dv": back(vt.grad)}


def activation(gen, swiglu):
    tokens, f = 7, 12
    up = rand(gen, tokens, 2 * f if swiglu else f, lo=-4, hi=4).requires_grad_()
    d_out = rand(gen, tokens, f)
    if swiglu:
        gate, lin = up[:, :f], up[:, f:]
        out = F.silu(gate) * lin
    else:
        out = F.gelu(up, approximate="tanh")
    out.backward(d_out)
    return {"swiglu": swiglu, "tokens": tokens, "f": f, "up": fp32s(up), "d_out": fp32s(d_out), "out": flat(out),
            "d_up": flat(up.grad)}


def adamw(gen, grad_size, eps, grad_scale):
    """Gradients of grad_size; eps beside the moments' square root (1e-6 with gradients of 1e-5) puts the
    epsilon's place in view; grad_scale (1 / micro-batches) multiplies the gradients first."""
    count, steps = 37, 3
    lr, beta1, beta2, wd = 1e-2, 0.9, 0.95, 0.1
    p0 = rand(gen, count)
    grads = [rand(gen, count, lo=-grad_size, hi=grad_size) for _ in range(steps)]
    p = torch.nn.Parameter(p0.clone())
    opt = torch.optim.AdamW([p], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd, foreach=False)
    after = []
    for g in grads:
        p.grad = g.clone() * grad_scale
        opt.step()
        after.append(flat(p))
    state = opt.state[p]
    return {"count": count, "lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": wd,
            "grad_scale": grad_scale, "param": fp32s(p0), "grads": [fp32s(g) for g in grads], "param_after": after,
            "m": flat(state["exp_avg"]), "v": flat(state["exp_avg_sq"])}


def embedding(gen):
    vocab, width = 11, 8
    ids = torch.tensor([3, 0, 10, 3, 7, 3, 0, 9, 1], dtype=torch.int64)
    table = rand(gen, vocab, width).requires_grad_()
    d_out = rand(gen, ids.numel(), width)
    out = F.embedding(ids, table)
    out.backward(d_out)
    # Megatron's vocabulary-parallel shard of rows [4, 9): ids outside it give zeros and no gradient.
    begin, rows = 4, 5
    inside = (ids >= begin) & (ids < begin + rows)
    shard_out = torch.where(inside[:, None], table.detach()[ids.clamp(begin, begin + rows - 1)], 0.0)
    return {"vocab": vocab, "width": width, "ids": ids.tolist(), "table": fp32s(table), "d_out": fp32s(d_out),
            "out": flat(out), "grad": flat(table.grad), "shard_begin": begin, "shard_rows": rows,
            "shard_out": flat(shard_out), "shard_grad": flat(table.grad[begin:begin + rows])}


def route(gen):
    tokens, experts, k = 6, 8, 2
    logits = rand(gen, tokens, experts, lo=-3, hi=3).requires_grad_()
    d_weight = rand(gen, tokens, k)
    probs = torch.softmax(logits, dim=-1)
    top, idx = torch.topk(probs, k, dim=-1)  # descending; random logits: no ties
    weight = top / top.sum(-1, keepdim=True)
    weight.backward(d_weight)
    return {"tokens": tokens, "experts": experts, "k": k, "logits": fp32s(logits), "idx": idx.reshape(-1).tolist(),
            "weight": flat(weight), "d_weight": fp32s(d_weight), "d_logits": flat(logits.grad)}


def softmax(gen):
    keys, queries, first_query, batch, scale = 12, 5, 7, 3, 0.25
    s = rand(gen, batch, queries, keys, lo=-4, hi=4).requires_grad_()  # strip b, query c: its keys in a row
    d_p = rand(gen, batch, queries, keys)
    visible = torch.arange(keys)[None, :] <= (first_query + torch.arange(queries))[:, None]
    p = torch.softmax((scale * s).masked_fill(~visible, -math.inf), dim=-1)
    p.backward(d_p)
    return {"keys": keys, "queries": queries, "first_query": first_query, "batch": batch, "scale": scale,
            "scores": fp32s(s), "d_probs": fp32s(d_p), "probs": flat(p), "d_scores": flat(s.grad)}


def moe(gen):
    tokens, k, experts, width = 5, 2, 4, 6
    idx = torch.tensor([[2, 0], [3, 2], [0, 1], [2, 3], [1, 0]], dtype=torch.int64)
    order = torch.argsort(idx.reshape(-1), stable=True)  # slots in expert order, token order within
    row_of_slot = torch.empty_like(order)
    row_of_slot[order] = torch.arange(order.numel())
    rows = rand(gen, tokens * k, width).requires_grad_()  # the experts' output rows, expert-major
    weight = rand(gen, tokens, k, lo=0.1, hi=1).requires_grad_()
    dy = rand(gen, tokens, width)
    y = (weight[:, :, None] * rows[row_of_slot].reshape(tokens, k, width)).sum(1)
    y.backward(dy)
    return {"tokens": tokens, "k": k, "experts": experts, "width": width, "idx": idx.reshape(-1).tolist(),
            "counts": torch.bincount(idx.reshape(-1), minlength=experts).tolist(),
            "row_of_slot": row_of_slot.tolist(), "rows": fp32s(rows), "weight": fp32s(weight), "dy": fp32s(dy),
            "y": flat(y), "d_rows": flat(rows.grad), "d_weight": flat(weight.grad)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="tests/data/torch_golden.json")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(20261206)
    golden = {
        "source": "scripts/torch_golden.py (PyTorch %s, float64 on the CPU from fp32 inputs)" % torch.__version__,
        "rmsnorm": [rmsnorm(gen, 1.0), rmsnorm(gen, 3e-3)],
        "rope": [rope(gen, 16), rope(gen, 8)],
        "attention": [attention(gen, 2, 10, 4, 2, 16, 16), attention(gen, 1, 9, 2, 2, 24, 16)],
        "activation": [activation(gen, True), activation(gen, False)],
        "adamw": [adamw(gen, 1e-2, 1e-8, 1.0), adamw(gen, 1e-5, 1e-6, 0.5)],
        "embedding": embedding(gen),
        "route": route(gen),
        "softmax": softmax(gen),
        "moe": moe(gen),
    }
    with open(args.output, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s" % args.output)


if __name__ == "__main__":
    main()
