# SPDX-License-Identifier: Apache-2.0
"""16-bit values through the torch.distributed backend "serene", under
torchrun (meson: `python3 -m torch.distributed.run`, 2 ranks, rank 0's
embedded switch).

Checks:
- float16 and bfloat16 all_reduce, SUM and AVG, go through the switch
  (libserene's op counter moves) on a 16-bit wire (bytes sent per value
  about 2) within serene_allreduce_typed's bound: one step 2^(E+1-B) per
  rank, B = 15 - ceil(log2 N), plus the float32 and the 16-bit format's
  roundings; float32 with wire_bits=16 likewise, and float32 with the
  default width (32) still about 4 bytes a value;
- a float16 SUM past 65504 raises SERENE_ERR_NONFINITE on every rank, and
  the group goes on;
- DDP with torch's fp16_compress_hook over "serene", and with
  serene_torch's fp16_hook and bf16_hook (torch 1.13 refuses its own
  bf16_compress_hook on CPU): every bucket through the switch as 16-bit
  values, one step within a bound of DDP over Gloo with torch's fp16 hook
  (Gloo here has no bfloat16), the same model on both ranks after a short
  training whose loss falls;
- PowerSGD's pattern: collectives started from completion callbacks, in
  an order that differs between the ranks, end with SERENE_ERR_MISMATCH
  on both ranks within the deadline (never a wrong sum, never a hang);
  and torch's own powerSGD_hook, which does that, either trains (the same
  model on both ranks) or stops with that error.
"""
import datetime
import math
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch
from torch_common import CLASSES, DIM, RANK, WORLD, check, cluster_dataset, log

LR = 0.05


def ulp32(x):
    return 2.0 ** (math.floor(math.log2(x)) - 23) if x > 0 else 2.0 ** -149


def ulp16(x, dtype):
    mant, lo = (10, -14) if dtype == torch.float16 else (7, -126)
    return 2.0 ** (max(math.floor(math.log2(x)) if x > 0 else lo, lo) - mant)


def bound16(values, n, avg, dtype):
    """serene_allreduce_typed's 16-bit bound with E taken over the whole
    tensor (>= each packet's): one step 2^(E+1-B) a rank (N for SUM, 1 for
    AVG), plus the float32 result's rounding and the dtype's."""
    m = float(values.abs().max())
    e = max(math.floor(math.log2(m)) if m > 0 else -96, -96)
    b = 15 - math.ceil(math.log2(n))
    r = m * n
    extra = ulp32(r) + (ulp16(r, dtype) if dtype != torch.float32 else 0.0)
    return (1 if avg else n) * 2.0 ** (e + 1 - b) + extra


def stats():
    return serene_torch.stats()


def payload_sent(s0, s1):
    """Payload bytes sent between two stats() (headers left out: probes
    and the exponent hints are header-only)."""
    return (s1["bytes_sent"] - s0["bytes_sent"]) - 28 * (s1["pkts_sent"] - s0["pkts_sent"])


def check_allreduce16(gloo):
    for dtype, wire in ((torch.float16, 0), (torch.bfloat16, 0), (torch.float32, 16)):
        g = torch.Generator().manual_seed(21 + RANK)
        x = (torch.randn(5003, generator=g) * (RANK + 1)).to(dtype)
        allx = [torch.zeros(x.shape) for _ in range(WORLD)]  # Gloo has no bfloat16: float32
        dist.all_gather(allx, x.float(), group=gloo)
        allx = torch.stack(allx).double()
        exact = allx.sum(0)
        for op, avg in ((dist.ReduceOp.SUM, False), (dist.ReduceOp.AVG, True)):
            s0 = stats()
            t = x.clone()
            if wire:  # float32 on a 16-bit wire: the op directly (the backend follows the env)
                serene_torch.allreduce_(t, "avg" if avg else "sum", wire_bits=16)
            else:
                dist.all_reduce(t, op=op, async_op=True).wait()
            s1 = stats()
            want = exact / WORLD if avg else exact
            err = float((t.double() - want).abs().max())
            b = bound16(allx, WORLD, avg, dtype)
            per_value = payload_sent(s0, s1) / x.numel()
            name = f"{str(dtype)[6:]} {'AVG' if avg else 'SUM'}"
            check(s1["ops_completed"] == s0["ops_completed"] + 1,
                  f"{name}: did not go through the switch")
            check(err <= b, f"{name}: error {err:.3g} above the bound {b:.3g}")
            check(2.0 <= per_value < 2.5, f"{name}: {per_value:.2f} payload bytes a value, not 16 bits")
            log(f"ok {name} 16-bit wire: error {err:.3g} <= {b:.3g}, {per_value:.2f} payload bytes a value")
    # float32 at the default width: 32 bits a value.
    t = torch.ones(4096)
    s0 = stats()
    dist.all_reduce(t)
    per_value = payload_sent(s0, stats()) / t.numel()
    check(4.0 <= per_value < 5 and float(t[0]) == WORLD, f"float32: {per_value:.2f} payload bytes a value")
    log(f"ok float32 default width: {per_value:.2f} payload bytes a value")


def check_overflow16():
    t = torch.full((300,), 60000.0, dtype=torch.float16)  # 2 x 60000 > 65504
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        check("SERENE_ERR_NONFINITE" in str(e), f"float16 overflow raised {e}")
        log("ok float16 SUM past 65504: SERENE_ERR_NONFINITE")
    else:
        check(False, "a float16 SUM past 65504 did not raise")
    t = torch.full((300,), 3.0, dtype=torch.float16)
    dist.all_reduce(t)
    check(bool((t == 3.0 * WORLD).all()), "the group is unusable after a non-finite sum")


def mlp():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(DIM, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))


def train(group, hook, data, steps, state=None):
    (xtr, ytr), _ = data
    model = mlp()
    ddp = DDP(model, process_group=group)
    if hook is not None:
        ddp.register_comm_hook(state if state is not None else group, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    losses = []
    order = torch.Generator().manual_seed(3)
    mine = torch.randperm(len(ytr), generator=order)[RANK::WORLD]
    for k in range(steps):
        idx = mine[(k * 32) % (len(mine) - 32):][:32]
        opt.zero_grad()
        loss = F.cross_entropy(ddp(xtr[idx]), ytr[idx])
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]), losses


def same_on_ranks(w):
    ref = w.clone()
    dist.broadcast(ref, 0)
    return torch.equal(ref, w)


def check_hooks(gloo):
    data = cluster_dataset()
    serene = dist.distributed_c10d._get_default_group()
    w0 = torch.cat([p.detach().reshape(-1) for p in mlp().parameters()])
    # torch 1.13's DDP refuses its bf16_compress_hook without CUDA and NCCL:
    # serene_torch.bf16_hook is the same through the switch's pipeline.
    for name, hook in (("fp16_compress_hook", default_hooks.fp16_compress_hook),
                       ("serene_torch.fp16_hook", serene_torch.fp16_hook),
                       ("serene_torch.bf16_hook", serene_torch.bf16_hook)):
        s0 = stats()
        w_serene, _ = train(serene, hook, data, 1)
        s1 = stats()
        check(s1["ops_completed"] > s0["ops_completed"], f"{name}: no switch op")
        sent = payload_sent(s0, s1)
        check(sent < 2.5 * w0.numel(), f"{name}: {sent} payload bytes for {w0.numel()} gradients")
        if "fp16" in name:  # Gloo here has no bfloat16 allreduce: fp16 only
            w_gloo, _ = train(gloo, default_hooks.fp16_compress_hook, data, 1)
            # The hook casts the gradient to float16 and divides by N;
            # both back ends sum those: after one step the difference is
            # lr times both sums' roundings, well within 2^-6 of the
            # largest weight change for this small model.
            diff = float((w_gloo - w_serene).abs().max())
            step = float((w_gloo - w0).abs().max())
            check(diff <= step * 2.0 ** -6 + 1e-7, f"{name}: one step differs by {diff:.3g} (step {step:.3g})")
            log(f"ok {name}, one step: within {diff:.3g} of DDP over Gloo with the hook "
                f"(step {step:.3g}); {sent / w0.numel():.2f} bytes a gradient")
        w, losses = train(serene, hook, data, 60)
        check(same_on_ranks(w), f"{name}: the ranks' models differ")
        first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
        check(last < 0.8 * first, f"{name}: loss {first:.3f} -> {last:.3f} does not fall")
        log(f"ok {name}: 60 steps over serene, loss {first:.3f} -> {last:.3f}, same model on both ranks")


def check_powersgd():
    """torch's powerSGD_hook (rank 1, error feedback) over "serene": it
    starts collectives from completion callbacks. It trains (the same model
    on both ranks) or stops with SERENE_ERR_MISMATCH; returns whether the
    group is still usable."""
    serene = dist.distributed_c10d._get_default_group()
    state = psgd.PowerSGDState(process_group=serene, matrix_approximation_rank=1,
                               start_powerSGD_iter=2, warm_start=False)
    try:
        w, _ = train(serene, psgd.powerSGD_hook, cluster_dataset(), 12, state)
    except RuntimeError as e:
        msg = str(e)
        check("SERENE_ERR_MISMATCH" in msg or "SERENE_ERR_BROKEN" in msg,
              f"powerSGD_hook raised {msg.splitlines()[0]}")
        log(f"ok powerSGD_hook over serene stops cleanly: {msg.splitlines()[0][:120]}")
        return False
    check(same_on_ranks(w), "powerSGD_hook: the ranks' models differ")
    log("ok powerSGD_hook over serene: 12 steps, the same model on both ranks")
    return True


def check_callback_order():
    """PowerSGD's pattern made deterministic: the ranks start two
    collectives in opposite orders. The switch pairs collectives by order,
    so the first one is a MISMATCH on both ranks (the other then fails
    with SERENE_ERR_BROKEN: from its future, or from its start when the
    MISMATCH came first), by the deadline: never a wrong sum."""
    a, b = torch.ones(700), torch.ones(900)
    errors, futs = [], []
    for t in ((a, b) if RANK == 0 else (b, a)):
        try:
            futs.append(dist.all_reduce(t, async_op=True).get_future())
        except RuntimeError as e:
            futs.append(e)
    for f in futs:
        try:
            if isinstance(f, RuntimeError):
                raise f
            f.wait()
        except RuntimeError as e:
            errors.append(str(e).splitlines()[0])
    check(len(errors) == 2 and "SERENE_ERR_MISMATCH" in errors[0] and "SERENE_ERR_BROKEN" in errors[1],
          f"collectives out of order: {errors}")
    log("ok collectives started in different orders: SERENE_ERR_MISMATCH, then BROKEN")


def main():
    check("SERENE_SWITCH" not in os.environ, "SERENE_SWITCH is set: this test starts its own")
    dist.init_process_group("serene", timeout=datetime.timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    check_allreduce16(gloo)
    check_overflow16()
    check_hooks(gloo)
    # Last: after a MISMATCH the group's allreduces are SERENE_ERR_BROKEN.
    if check_powersgd():
        check_callback_order()
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    log("PASS")


if __name__ == "__main__":
    main()
