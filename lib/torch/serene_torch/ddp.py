# SPDX-License-Identifier: Apache-2.0
"""DDP communication hook: gradient buckets averaged through Serene.

    model = DistributedDataParallel(model)      # any process group (gloo)
    model.register_comm_hook(None, serene_torch.allreduce_hook)

DDP still uses its process group for what is not a gradient (the initial
broadcast of parameters and buffers); every gradient bucket goes through the
switch instead: the hook starts averaging bucket.buffer() in place (float32,
CPU; DDP's buckets are flat and contiguous, so nothing is copied) and
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
