#!/usr/bin/env python3
"""PyTorch anchors for scripts/device-check.sh (issue 15): the same work as factorybench's GPU figures, run by
the framework users already have, in the same session, so every GPU figure is reported as a ratio.

Prints one JSON object per line: {"anchor": NAME, "value": X, "unit": U, "note": ...} or {"anchor": NAME,
"error": WHY}. Timing as our own figures (workloads/measurement_loop): `warmup` untimed calls, then a CUDA event
pair around each of `iters` calls, and the median call.

  python3 scripts/torch_anchors.py [--quick]      (--quick: small shapes, for a smoke run)
  python3 scripts/torch_anchors.py --cpu          (tiny shapes on the CPU, wall-clock medians: checks this
                                                   script against the installed torch on a machine without a
                                                   GPU; its figures are not anchors)
"""
import json
import sys
import time

DEV = "cuda"  # "cpu" with --cpu


def emit(name, value=None, unit="", note="", error=None):
    row = {"anchor": name}
    if error is not None:
        row["error"] = error
    else:
        row.update(value=round(value, 4), unit=unit, note=note)
    print(json.dumps(row), flush=True)


def timed(torch, fn, warmup, iters):
    """Median seconds of one call of fn(), each call between its own pair of CUDA events (on the CPU, where
    calls are synchronous, the wall clock around each)."""
    for _ in range(warmup):
        fn()
    if DEV == "cpu":
        ms = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t0) * 1e3)
    else:
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for start, stop in pairs:
            start.record()
            fn()
            stop.record()
        pairs[-1][1].synchronize()
        ms = [start.elapsed_time(stop) for start, stop in pairs]
    ms.sort()
    mid = len(ms) // 2
    return (ms[mid] if len(ms) % 2 else (ms[mid - 1] + ms[mid]) / 2) / 1e3


def matmul_bf16(torch, n):
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    s = timed(torch, lambda: torch.matmul(a, b), 10, 50)
    emit("torch.matmul bf16 %d^3" % n, 2.0 * n**3 / s / 1e12, "TFLOP/s")


def scaled_mm_fp8(torch, n):
    a = torch.randn(n, n, device=DEV).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=DEV).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm requires
    one = torch.tensor(1.0, device=DEV)
    s = timed(torch, lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), 10, 50)
    emit("torch._scaled_mm fp8 e4m3 %d^3" % n, 2.0 * n**3 / s / 1e12, "TFLOP/s")


def sdpa_fwd_bwd(torch, seq, heads, kv_heads, dim):
    """Causal SDPA forward + backward, per cuDNN and flash backends; Megatron's count 3·(2·2·s²·h)/2."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    flops = 3.0 * (2.0 * 2.0 * seq * seq * heads * dim) / 2.0
    q = torch.randn(1, heads, seq, dim, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    # K/V with kv_heads heads, expanded to the query heads outside the timed region (GQA as the step runs it).
    k0 = torch.randn(1, kv_heads, seq, dim, device=DEV, dtype=torch.bfloat16)
    v0 = torch.randn(1, kv_heads, seq, dim, device=DEV, dtype=torch.bfloat16)
    k = k0.repeat_interleave(heads // kv_heads, dim=1).requires_grad_()
    v = v0.repeat_interleave(heads // kv_heads, dim=1).requires_grad_()
    d_o = torch.randn_like(q)
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        label = "torch SDPA %s causal fwd+bwd s%d h%d/%d d%d" % (name, seq, heads, kv_heads, dim)
        try:
            with sdpa_kernel(backend):
                def step():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    o.backward(d_o)
                s = timed(torch, step, 3, 20)
            emit(label, flops / s / 1e12, "TFLOP/s", "%.3f ms" % (s * 1e3))
        except Exception as e:  # a backend this torch or GPU lacks
            emit(label, error=str(e).splitlines()[0][:200])


def copy_and_adamw(torch, params, copy_bytes=1 << 30):
    """Device copy bandwidth (read+write bytes/s) and fused AdamW on fp32 params: 28 B/param (p, g, m, v read;
    p, m, v written), as our bf16 Adam counts its 28 B/param."""
    # Random bytes, never zero (the timing rules: no all-zero or uninitialised data).
    src = torch.randint(1, 256, (copy_bytes,), dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(src)
    s = timed(torch, lambda: dst.copy_(src), 3, 20)
    copy = 2.0 * src.numel() / s
    emit("torch copy %s (read+write)" % ("1 GiB" if copy_bytes == 1 << 30 else "%d B" % copy_bytes), copy / 1e9,
         "GB/s")
    del src, dst
    sizes = [4096 * 4096, 4096 * 1024, 4096 * 1024, 4096 * 4096, 3 * 4096 * 14336]
    tensors, total = [], 0
    while total < params:
        for n in sizes:
            n = min(n, params - total)
            if n <= 0:
                break
            p = torch.nn.Parameter(torch.rand(n, device=DEV) + 0.5)
            p.grad = (torch.rand_like(p) + 0.5) * 1e-3
            tensors.append(p)
            total += n
    opt = torch.optim.AdamW(tensors, lr=1e-4, fused=True)
    s = timed(torch, opt.step, 3, 20)
    bw = 28.0 * total / s
    emit("torch AdamW fused fp32 %d params" % total, bw / 1e9, "GB/s", "fraction of copy %.3f" % (bw / copy))


def rms_norm(torch, x, weight, eps):
    """torch.nn.functional.rms_norm where this torch has it (2.4+), else the formula."""
    import torch.nn.functional as F
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * weight


def eager_step(torch, layers, seq, hidden, heads, kv_heads, ffn, vocab, theta=500000.0, eps=1e-5):
    """One eager training step of the decoder factorybench's `train` runs, the same work: embedding lookup; per
    layer RMSNorm, QKV, RoPE on Q and K (rotate-half, tables built once), causal SDPA (grouped-query through
    enable_gqa where this torch has it), output projection, residual, RMSNorm, SwiGLU MLP, residual; final
    RMSNorm, output layer and a mean-square loss; backward; fused AdamW. bf16 weights; note that torch keeps
    AdamW state in the parameters' bf16 (16 B/param moved) where factorybench keeps fp32 master weights and
    moments (28 B/param), so the anchor's optimizer is the lighter one."""
    import torch.nn.functional as F

    d = hidden // heads
    dev, dt = DEV, torch.bfloat16
    lin = lambda i, o: torch.nn.Linear(i, o, bias=False, device=dev, dtype=dt)
    gain = lambda: torch.nn.Parameter(torch.ones(hidden, device=dev, dtype=dt))
    blocks = torch.nn.ModuleList()
    for _ in range(layers):
        block = torch.nn.ModuleDict({"qkv": lin(hidden, (heads + 2 * kv_heads) * d), "o": lin(heads * d, hidden),
                                     "up": lin(hidden, 2 * ffn), "down": lin(ffn, hidden)})
        block.norm1, block.norm2 = gain(), gain()
        blocks.append(block)
    embed = torch.nn.Embedding(vocab, hidden, device=dev, dtype=dt)
    final_norm, head = gain(), lin(hidden, vocab)
    params = list(blocks.parameters()) + list(embed.parameters()) + [final_norm] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    ids = torch.randint(0, vocab, (1, seq), device=dev)
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d)
    angles = torch.outer(torch.arange(seq, device=dev, dtype=torch.float32), inv_freq)
    cos = torch.cat([angles.cos(), angles.cos()], -1).to(dt)[None, :, None, :]
    sin = torch.cat([angles.sin(), angles.sin()], -1).to(dt)[None, :, None, :]

    def rope(x):  # x: [1, seq, heads, d]
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    try:  # grouped-query SDPA without repeating K and V (torch 2.5+)
        t = torch.zeros(1, 2, 4, 8, device=dev, dtype=dt)
        F.scaled_dot_product_attention(t, t[:, :1], t[:, :1], is_causal=True, enable_gqa=True)
        gqa = True
    except (TypeError, RuntimeError):
        gqa = False

    def step():
        x = embed(ids)
        for b in blocks:
            h = rms_norm(torch, x, b.norm1, eps)
            q, k, v = b["qkv"](h).split([heads * d, kv_heads * d, kv_heads * d], dim=-1)
            q = rope(q.view(1, seq, heads, d)).transpose(1, 2)
            k = rope(k.view(1, seq, kv_heads, d)).transpose(1, 2)
            v = v.view(1, seq, kv_heads, d).transpose(1, 2)
            if gqa:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                k, v = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (k, v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b["o"](a.transpose(1, 2).reshape(1, seq, heads * d))
            g, u = b["up"](rms_norm(torch, x, b.norm2, eps)).chunk(2, dim=-1)
            x = x + b["down"](F.silu(g) * u)
        loss = head(rms_norm(torch, x, final_norm, eps)).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    s = timed(torch, step, 2, 5)
    emit("torch eager step %d layers seq %d (d %d, %d/%d heads, ffn %d, vocab %d)" % (layers, seq, hidden, heads,
         kv_heads, ffn, vocab), s, "s/step", "embedding, RMSNorm, RoPE, SDPA%s, fused AdamW (bf16 state)" %
         (" enable_gqa" if gqa else " (K/V repeated)"))


def main():
    global DEV
    args = sys.argv[1:]
    quick = "--quick" in args
    if "--cpu" in args:
        DEV = "cpu"
    try:
        import torch
    except ImportError as e:
        emit("torch", error="PyTorch not importable: %s" % e)
        return 1
    if DEV == "cpu":
        # The same code paths at shapes a CPU runs in seconds: llama's head layout (GQA 4:1, d 128 for SDPA),
        # a model 1/16 as wide with 2 layers for the step.
        emit("torch %s on the CPU (--cpu: a check of this script, not anchors)" % torch.__version__, 0.0, "",
             "versions")
        checks = [
            ("matmul_bf16", lambda: matmul_bf16(torch, 256)),
            ("scaled_mm_fp8", lambda: scaled_mm_fp8(torch, 256)),
            ("sdpa", lambda: sdpa_fwd_bwd(torch, 256, 8, 2, 128)),
            ("copy_and_adamw", lambda: copy_and_adamw(torch, 1 << 20, 1 << 24)),
            ("eager_step", lambda: eager_step(torch, 2, 256, 256, 8, 2, 896, 8016)),
        ]
    else:
        if not torch.cuda.is_available():
            emit("torch", error="no CUDA device visible to PyTorch")
            return 1
        emit("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name()), 0.0, "", "versions")
        n = 1024 if quick else 8192
        checks = [
            ("matmul_bf16", lambda: matmul_bf16(torch, n)),
            ("scaled_mm_fp8", lambda: scaled_mm_fp8(torch, n)),
            ("sdpa", lambda: sdpa_fwd_bwd(torch, 1024 if quick else 8192, 32, 8, 128)),
            ("copy_and_adamw", lambda: copy_and_adamw(torch, (1 << 24) if quick else (1 << 29))),
            ("eager_step", lambda: eager_step(torch, 4, 1024 if quick else 8192, 4096, 32, 8, 14336, 128256)),
        ]
    for name, check in checks:
        t0 = time.time()
        try:
            check()
        except Exception as e:  # one anchor failing (memory, a missing kernel) must not stop the others
            emit(name, error=(str(e).splitlines() or [repr(e)])[0][:200])
        if DEV == "cuda":
            torch.cuda.empty_cache()
        print(json.dumps({"check": name, "elapsed_s": round(time.time() - t0, 1)}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
