# SPDX-License-Identifier: Apache-2.0
"""DDP communication hook: gradient buckets averaged through Serene.

    model = DistributedDataParallel(model)      # any process group (gloo)
    model.register_comm_hook(None, serene_torch.allreduce_hook)

DDP still uses its process group for what is not a gradient (the initial
broadcast of parameters and buffers); every gradient bucket goes through the
switch instead: the hook averages bucket.buffer() in place (float32, CPU;
DDP's buckets are flat and contiguous, so nothing is copied) and returns a
completed future. The allreduce is synchronous: it ends within the
context's deadline or raises RuntimeError, which DDP propagates out of
backward(). The ranks of the DDP group must be the Serene job's ranks, in the
same order (DDP sends the same buckets in the same order on every rank).
"""
import torch
import torch.distributed as dist

from . import _ops


def allreduce_hook(state, bucket):
    """DDP comm hook (torch >= 1.10 API): average the bucket over the job.

    state is unused (pass None). Returns a torch.futures.Future holding the
    averaged bucket buffer.
    """
    buf = bucket.buffer()
    fut = torch.futures.Future()
    try:
        if dist.is_initialized() and dist.get_world_size() != _ops.world_size():
            raise RuntimeError(
                f"serene_torch.allreduce_hook: the DDP process group has {dist.get_world_size()} "
                f"ranks but the Serene job {_ops.world_size()}; they must be the same workers")
        _ops.allreduce_(buf, "avg")
    except Exception as e:  # give DDP the error through the future it waits on
        fut.set_exception(e)
        return fut
    fut.set_result(buf)
    return fut
