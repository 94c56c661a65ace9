# SPDX-License-Identifier: Apache-2.0
"""serene_torch: Serene in-network aggregation for PyTorch.

Importing the package loads the extension module (serene_torch_ops.so, next
to this file, or the path in $SERENE_TORCH_OPS) which registers the
operators torch.ops.serene.* (see lib/torch/csrc/serene_ops.cpp); they work
from Python and from TorchScript.

    import serene_torch
    serene_torch.init()                      # SERENE_* env, as set by serene-run
    serene_torch.allreduce_(t, op="avg")     # float32/16, bfloat16; CPU, contiguous
    ddp.register_comm_hook(None, serene_torch.allreduce_hook)

or, as a torch.distributed backend (pg.py; torchrun needs nothing else):

    dist.init_process_group("serene")        # registered by importing serene_torch

One context per process, created by init() from the same environment as the
C library's serene_config_from_env() (SERENE_RANK, SERENE_WORLD_SIZE,
SERENE_SWITCH, SERENE_JOB, SERENE_JOB_NONCE, SERENE_TIMEOUT_MS, ...), like
torch.distributed's default group. It is destroyed by finalize() or at exit.
Errors of libserene raise RuntimeError naming the code (SERENE_ERR_TIMEOUT,
...); every call ends by the context's deadline.
"""
import atexit
import os

import torch

__all__ = [
    "init", "finalize", "is_initialized", "rank", "world_size", "allreduce_",
    "push", "pull", "clock", "clock_info", "store_capacity", "stats",
    "allreduce_hook", "fp16_hook", "bf16_hook", "SSP", "StaleSync", "SYNC_MODES",
    "ProcessGroupSerene",
]

_OPS_NAME = "serene_torch_ops.so"


def _load():
    path = os.environ.get("SERENE_TORCH_OPS") or os.path.join(os.path.dirname(__file__), _OPS_NAME)
    if not os.path.exists(path):
        raise ImportError(
            f"serene_torch: extension module {path} not found (build with meson -Dtorch=enabled, "
            "then use <build>/lib/torch on PYTHONPATH, or set SERENE_TORCH_OPS)")
    torch.ops.load_library(path)


_load()
_ops = torch.ops.serene

#: clock_info()["mode"] values, as in serene_sync_mode.
SYNC_MODES = {0: "bsp", 1: "ssp", 2: "asp"}


def init(timeout_ms=None, store_frac_bits=None):
    """Join the Serene job described by the SERENE_* environment.

    timeout_ms and store_frac_bits, when given, override the environment
    (the per-call deadline; the SSP store's fixed-point fraction bits, which
    must agree across the job). Raises RuntimeError when the switch does not
    answer by the deadline, refuses the worker, or when already initialized.
    """
    _ops.init(-1 if timeout_ms is None else int(timeout_ms),
              -1 if store_frac_bits is None else int(store_frac_bits))


def finalize():
    """Leave the job and free the context (a no-op when not initialized)."""
    _ops.finalize()


atexit.register(finalize)


def is_initialized():
    return bool(_ops.is_initialized())


def rank():
    return int(_ops.rank())


def world_size():
    return int(_ops.world_size())


def allreduce_(tensor, op="sum", wire_bits=0):
    """Sum ("sum") or average ("avg") tensor over all workers, in place.

    tensor must be float32, float16 or bfloat16, on the CPU and contiguous.
    wire_bits: 16 or 32 bits per value on the wire; 0 (the default) is 16
    for the 16-bit types and SERENE_WIRE_BITS (else 32) for float32. Every
    worker must make the same calls with the same sizes and widths, in the
    same order. The result is within the quantization bound of
    include/serene/serene.h (serene_allreduce_typed). Returns tensor.
    """
    return _ops.allreduce_(tensor, op, int(wire_bits))


def push(tensor, offset):
    """Add tensor's values into the job's SSP store at word offset."""
    _ops.push(tensor, int(offset))


def pull(out, offset, delta=False):
    """Read out.numel() store words at offset into out (in place); with
    delta=True, what was added since this worker's last pull. Returns out."""
    return _ops.pull(out, int(offset), bool(delta))


def clock():
    """End this worker's clock; returns when the barrier lets it go on, with
    the clock the worker is now in."""
    return int(_ops.clock())


def clock_info():
    """The worker's view of the barrier: dict clock, low, high, mode, staleness."""
    c, low, high, mode, s = _ops.clock_info()
    return {"clock": c, "low": low, "high": high, "mode": SYNC_MODES.get(mode, str(mode)),
            "staleness": s}


def store_capacity():
    """Words of the job's SSP store (0 if the switch has none)."""
    return int(_ops.store_capacity())


def stats():
    """The context's counters (serene_stats) as a dict."""
    return dict(_ops.stats())


from .ddp import allreduce_hook, bf16_hook, fp16_hook  # noqa: E402  (needs _ops)
from .ssp import SSP  # noqa: E402
from .stale import StaleSync  # noqa: E402
from .pg import ProcessGroupSerene, register as _register_backend  # noqa: E402

# torch.distributed backend "serene": init_process_group("serene") after import.
_register_backend()
