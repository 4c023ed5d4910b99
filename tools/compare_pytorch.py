#!/usr/bin/python3
"""The lowband model in PyTorch, side by side with lowband's C++ one.

1. Runs `bench_model --dump=DIR`: lowband's initial weights, one batch (4 layers,
   d_model 256, 4 heads, ffn 688, byte vocabulary, one sequence of 2048 tokens),
   its loss, gradients, and the weights after one clipped AdamW step.
2. Loads the same weights into the same model written in PyTorch (fp32) and
   checks the loss, every tensor's gradient and the AdamW update against them.
3. Times one training step (forward, backward, clipping, AdamW) of each on the
   same number of CPU threads: PyTorch here, lowband with bench_model's
   BM_model_train_step. Medians.

Run with the system python that Debian's python3-torch installs into:
  /usr/bin/python3 tools/compare_pytorch.py --bench build-model/bench_model
Exit status 1 when a comparison fails its tolerance.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(dir_, name, dtype):
    return np.fromfile(os.path.join(dir_, name), dtype=dtype)


def make_params(meta, flat):
    """name -> fp32 leaf tensor with grad, views of the flat layout (norms are 1-D)."""
    params = {}
    for t in meta["tensors"]:
        a = flat[t["offset"]: t["offset"] + t["rows"] * t["cols"]].copy()
        shape = (t["cols"],) if t["rows"] == 1 else (t["rows"], t["cols"])
        params[t["name"]] = torch.nn.Parameter(torch.from_numpy(a).reshape(shape))
    return params


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, positions, theta):
    """Llama rotate-half; x (T, heads, hd); angles in float64 as lowband does."""
    hd = x.shape[-1]
    half = hd // 2
    freq = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / hd)
    angle = positions.to(torch.float64)[:, None] * freq[None, :]
    cos = torch.cos(angle).to(x.dtype)[:, None, :]
    sin = torch.sin(angle).to(x.dtype)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def attention(q, k, v):
    """Causal softmax attention, (heads, T, hd). PyTorch >= 2.0 has a fused
    kernel; Debian 12's 1.13 does not, so there it is the textbook form."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v


def forward(p, cfg, eps, theta, inputs, targets):
    T, d, H, KV = cfg["seq_len"], cfg["d_model"], cfg["heads"], cfg["kv_heads"]
    hd = d // H
    pos = torch.arange(T)
    x = p["embedding"][inputs]
    for l in range(cfg["layers"]):
        w = lambda n: p[f"layers.{l}.{n}"]
        xn = rmsnorm(x, w("attn_norm"), eps)
        q = rope((xn @ w("wq").T).view(T, H, hd), pos, theta)
        k = rope((xn @ w("wk").T).view(T, KV, hd), pos, theta)
        v = (xn @ w("wv").T).view(T, KV, hd)
        k = k.repeat_interleave(H // KV, dim=1)  # query head h reads kv head h // (H/KV)
        v = v.repeat_interleave(H // KV, dim=1)
        att = attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
        x = x + att.transpose(0, 1).reshape(T, d) @ w("wo").T
        xn = rmsnorm(x, w("mlp_norm"), eps)
        x = x + (F.silu(xn @ w("w_gate").T) * (xn @ w("w_up").T)) @ w("w_down").T
    head = p["embedding"] if cfg["tie_embeddings"] else p["lm_head"]
    logits = rmsnorm(x, p["final_norm"], eps) @ head.T
    return F.cross_entropy(logits, targets)


def make_optimizer(meta, params):
    o = meta["optimizer"]
    decay = [params[t["name"]] for t in meta["tensors"] if t["decays"]]
    no_decay = [params[t["name"]] for t in meta["tensors"] if not t["decays"]]
    return torch.optim.AdamW([{"params": decay, "weight_decay": o["weight_decay"]},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])


def train_step(meta, params, opt, inputs, targets):
    opt.zero_grad(set_to_none=True)
    loss = forward(params, meta["config"], meta["norm_eps"], meta["rope_theta"], inputs, targets)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(list(params.values()), meta["optimizer"]["grad_clip"])
    opt.step()
    return loss, norm


def rel(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def compare(meta, dir_, tol):
    flat0 = load(dir_, "params0.f32", np.float32)
    grads = load(dir_, "grads.f32", np.float32)
    flat1 = load(dir_, "params1.f32", np.float32)
    inputs = torch.from_numpy(load(dir_, "inputs.i32", np.int32).astype(np.int64))
    targets = torch.from_numpy(load(dir_, "targets.i32", np.int32).astype(np.int64))
    params = make_params(meta, flat0)
    opt = make_optimizer(meta, params)
    ok = True
    # Gradients before clipping: run forward/backward alone first.
    loss = forward(params, meta["config"], meta["norm_eps"], meta["rope_theta"], inputs, targets)
    loss.backward()
    e = abs(loss.item() - meta["loss"]) / meta["loss"]
    print(f"loss: pytorch {loss.item():.6f}  lowband {meta['loss']:.6f}  rel. diff {e:.1e}")
    ok &= e < tol
    worst = ("", 0.0)
    for t in meta["tensors"]:
        g = grads[t["offset"]: t["offset"] + t["rows"] * t["cols"]]
        e = rel(g, params[t["name"]].grad.numpy())
        worst = max(worst, (t["name"], e), key=lambda w: w[1])
    print(f"gradients: worst tensor {worst[0]}: rel. error {worst[1]:.1e}")
    ok &= worst[1] < tol
    norm = torch.nn.utils.clip_grad_norm_(list(params.values()), meta["optimizer"]["grad_clip"])
    e = abs(norm.item() - meta["grad_norm"]) / meta["grad_norm"]
    print(f"grad norm: pytorch {norm.item():.6f}  lowband {meta['grad_norm']:.6f}  rel. diff {e:.1e}")
    ok &= e < tol
    opt.step()
    torch_flat1 = np.empty_like(flat1)
    for t in meta["tensors"]:
        torch_flat1[t["offset"]: t["offset"] + t["rows"] * t["cols"]] = params[t["name"]].detach().numpy().ravel()
    # Compare the updates (p1 - p0), not p1: the update is ~lr, p is ~0.02. The
    # first Adam step is lr·g/(|g| + eps) ≈ lr·sign(g), so where |g| is within
    # ~100·eps of 0 fp32 rounding of g decides it: those entries are left out
    # (and counted).
    firm = np.abs(grads) > 100 * meta["optimizer"]["eps"]
    d_low = flat1.astype(np.float64) - flat0
    d_torch = torch_flat1.astype(np.float64) - flat0
    e = rel(d_low[firm], d_torch[firm])
    print(f"AdamW update: rel. error {e:.1e} (over {firm.sum()} of {firm.size} entries; "
          f"the rest have |g| <= 100 eps)")
    ok &= e < tol
    return ok


def time_torch(meta, dir_, steps):
    flat0 = load(dir_, "params0.f32", np.float32)
    inputs = torch.from_numpy(load(dir_, "inputs.i32", np.int32).astype(np.int64))
    targets = torch.from_numpy(load(dir_, "targets.i32", np.int32).astype(np.int64))
    params = make_params(meta, flat0)
    opt = make_optimizer(meta, params)
    train_step(meta, params, opt, inputs, targets)  # warm-up
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        train_step(meta, params, opt, inputs, targets)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_lowband(bench, reps):
    out = subprocess.run([bench, "--benchmark_filter=BM_model_train_step",
                          f"--benchmark_repetitions={reps}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    return statistics.median(b["real_time"] for b in runs) / 1e3  # ms -> s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/bench_model", help="path to lowband's bench_model")
    ap.add_argument("--steps", type=int, default=5, help="timed steps (medians) of each")
    ap.add_argument("--tol", type=float, default=1e-4, help="relative tolerance of the checks")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as dir_:
        subprocess.run([args.bench, f"--dump={dir_}"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(dir_, "meta.json")) as f:
            meta = json.load(f)
        threads = meta["threads"]
        torch.set_num_threads(threads)
        ok = compare(meta, dir_, args.tol)
        if not args.no_timing:
            c = meta["config"]
            print(f"training step, {c['layers']} layers, d_model {c['d_model']}, {c['heads']} heads, "
                  f"T {c['seq_len']}, vocab {c['vocab']}, {threads} threads, fp32, median of {args.steps}:")
            t_torch = time_torch(meta, dir_, args.steps)
            t_low = time_lowband(args.bench, args.steps)
            print(f"  pytorch {torch.__version__}: {t_torch * 1e3:8.1f} ms")
            print(f"  lowband:           {t_low * 1e3:8.1f} ms   ({t_torch / t_low:.2f}x)")
    print("OK" if ok else "FAILED: a comparison exceeded the tolerance")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
