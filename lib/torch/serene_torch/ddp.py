# SPDX-License-Identifier: Apache-2.0
"""DDP communication hook: gradient buckets averaged through Serene.

    model = DistributedDataParallel(model)      # any process group (gloo)
    model.register_comm_hook(None, serene_torch.allreduce_hook)

DDP still uses its process group for what is not a gradient (the initial
broadcast of parameters and buffers); every gradient bucket goes through the
switch instead: the hook starts averaging bucket.buffer() in place (float32
or a 16-bit type, CPU; DDP's buckets are flat and contiguous, so nothing is
copied) and
returns a torch.futures.Future at once. libserene's data-path thread carries
the op on while backward computes the next buckets; the waiter thread of
pg.py's _Pipeline (one for the hook, in this process) waits for the ops in
order and completes each future with the averaged buffer, or with the op's
error (RuntimeError, by the context's deadline), which DDP raises out of
backward(). At most pg.MAX_IN_FLIGHT ops are open; a bucket beyond that
waits in the hook for the oldest. The ranks of the DDP group must be the
Serene job's ranks, in the same order (DDP sends the same buckets in the
same order on every rank).
"""
import threading

import torch
import torch.distributed as dist

from . import _ops
from .pg import _Pipeline

_pipe = None
_pipe_lock = threading.Lock()


def _pipeline():
    global _pipe
    with _pipe_lock:
        if _pipe is None:
            _pipe = _Pipeline()
        return _pipe


def allreduce_hook(state, bucket):
    """DDP comm hook (torch >= 1.10 API): average the bucket over the job.

    state is unused (pass None). Returns a torch.futures.Future that holds
    the averaged bucket buffer once the switch has answered; the buffer must
    not be touched before (DDP waits for the future).
    """
    buf = bucket.buffer()
    try:
        if dist.is_initialized() and dist.get_world_size() != _ops.world_size():
            raise RuntimeError(
                f"serene_torch.allreduce_hook: the DDP process group has {dist.get_world_size()} "
                f"ranks but the Serene job {_ops.world_size()}; they must be the same workers")
        return _pipeline().start(buf, "avg", buf)
    except Exception as e:  # give DDP the error through the future it waits on
        fut = torch.futures.Future()
        fut.set_exception(e)
        return fut


def _compress_hook(dtype, name):
    def hook(state, bucket):
        buf = bucket.buffer()
        try:
            comp = buf.to(dtype)

            def back():
                buf.copy_(comp)
            return _pipeline().start(comp, "avg", buf, back)
        except Exception as e:
            fut = torch.futures.Future()
            fut.set_exception(e)
            return fut
    hook.__name__ = name
    hook.__qualname__ = name
    hook.__doc__ = (f"DDP comm hook: each bucket cast to {dtype}, averaged through the switch "
                    "as 16-bit values, and cast back (torch's compression hooks, through "
                    "Serene's pipeline). state is unused (pass None).")
    return hook


#: torch's fp16_compress_hook and bf16_compress_hook through the switch
#: directly: the bucket cast to the 16-bit type, averaged as 16-bit values
#: (SERENE_WIRE16), cast back. torch 1.13's DDP refuses its own
#: bf16_compress_hook without CUDA and NCCL; these are plain hooks, so
#: they register on CPU (with the "serene" group, torch's fp16 hook sends
#: its float16 buckets through the switch too).
fp16_hook = _compress_hook(torch.float16, "fp16_hook")
bf16_hook = _compress_hook(torch.bfloat16, "bf16_hook")
