# SPDX-License-Identifier: Apache-2.0
"""SSP training helper: the model's updates live in the switch's store.

    ssp = serene_torch.SSP(model.parameters(), lr=0.1)
    for x, y in batches:
        model.zero_grad(); loss_fn(model(x), y).backward()
        ssp.step()          # push -lr*grad, clock, pull delta (one serene_step), apply
    ssp.sync()              # see every worker's last update

The parameters are laid out one after the other, flattened, from word
`offset` of the job's store (serene_torch.store_capacity() words). The store
holds the sum of every worker's updates; each worker's model is its initial
parameters plus the updates it has pulled. So every worker must start from
the same parameters (seed the initialisation identically, or copy them) and
use the same parameter list, offset and number of steps.

The context is serene_torch's: the one a process group of backend "serene"
created (init_process_group("serene") under torchrun: its rendezvous, its
switch), or serene_torch.init() under serene-run. Under torchrun with the
embedded switch, the job's policy and store come from
SERENE_SWITCH_JOB_OPTS (e.g. "policy=ssp:2") and the store's fraction bits
from SERENE_STORE_FRAC_BITS, set for every rank:

    SERENE_SWITCH_JOB_OPTS=policy=ssp:2 SERENE_STORE_FRAC_BITS=20 \
        torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 train.py
    # train.py: dist.init_process_group("serene"); ssp = serene_torch.SSP(...)

Each step is one clock of the barrier: the switch holds a worker that is more
than s clocks ahead of the slowest (s from the policy: BSP 0, SSP(s), ASP
unbounded), and after a clock every push of clocks <= c - s is in the pull.
Values are stored in fixed point with store_frac_bits fraction bits
(SERENE_STORE_FRAC_BITS or serene_torch.init(store_frac_bits=...), default
16: steps of 1.5e-5, so updates smaller than half of that are lost; 20 gives
steps of 1e-6 with accumulators that saturate each push beyond +-2048).
"""
import torch
import torch.distributed as dist

from . import _ops


def _check_context(group):
    """RuntimeError unless serene_torch's context is up and, when a process
    group is given (or the default one exists), that group is the job's."""
    if group is None and dist.is_available() and dist.is_initialized():
        if dist.get_backend() != "serene":
            group = None  # a gloo group beside serene_torch.init(): fine
        else:
            group = dist.group.WORLD
    if group is not None:
        if dist.get_backend(group) != "serene":
            raise RuntimeError(f"SSP: group has backend {dist.get_backend(group)!r}; the store is "
                               "reached through backend 'serene' (or serene_torch.init())")
    if not _ops.is_initialized():
        raise RuntimeError("SSP: serene_torch is not initialized: call "
                           "dist.init_process_group('serene') (torchrun) or serene_torch.init() "
                           "(serene-run) first")
    if group is not None and dist.get_world_size(group) != _ops.world_size():
        raise RuntimeError(f"SSP: group has {dist.get_world_size(group)} ranks, the Serene job "
                           f"{_ops.world_size()}")


class SSP:
    """Push gradient, clock, pull delta, apply: one SSP step per call."""

    def __init__(self, params, lr, offset=0, group=None):
        """group: the "serene" process group whose context to use (default:
        the default group when it is "serene"; else serene_torch.init()'s)."""
        self.params = [p for p in params]
        if not self.params:
            raise ValueError("SSP: empty parameter list")
        for i, p in enumerate(self.params):
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise ValueError(f"SSP: parameter {i} is {p.dtype} on {p.device}; "
                                 "the store takes float32 CPU parameters")
        if offset < 0:
            raise ValueError(f"SSP: offset must be >= 0, got {offset}")
        _check_context(group)
        self.lr = float(lr)
        self.offset = int(offset)
        self.numel = sum(p.numel() for p in self.params)
        cap = int(_ops.store_capacity())
        if self.offset + self.numel > cap:
            raise ValueError(f"SSP: {self.numel} parameters at offset {self.offset} do not fit the "
                             f"job's store of {cap} words (serene-switch --job ...,store=WORDS)")
        self._push_buf = torch.zeros(self.numel, dtype=torch.float32)
        self._delta = torch.zeros(self.numel, dtype=torch.float32)
        self._last_push_clock = -1  # the clock of this worker's last push
        self.steps = 0

    def _views(self, flat):
        o = 0
        for p in self.params:
            n = p.numel()
            yield p, flat[o:o + n].view_as(p)
            o += n

    def pull_apply(self):
        """Add what the store gained since this worker's last pull to the
        parameters."""
        _ops.pull(self._delta, self.offset, True)
        with torch.no_grad():
            for p, d in self._views(self._delta):
                p.add_(d)

    def step(self):
        """Push -lr * grad (a missing grad counts as zero), end the clock
        (held by the barrier if too far ahead), pull the delta and apply
        it, as one serene_step: each row of the store comes back as soon as
        the barrier allows. Returns the clock the worker is now in."""
        with torch.no_grad():
            for p, dst in self._views(self._push_buf):
                if p.grad is None:
                    dst.zero_()
                else:
                    torch.mul(p.grad, -self.lr, out=dst)
        self._last_push_clock = int(_ops.clock_info()[0])
        # Push, clock and pull delta as one pipelined operation.
        _ops.step(self._push_buf, self._delta, self.offset, True)
        with torch.no_grad():
            for p, d in self._views(self._delta):
                p.add_(d)
        self.steps += 1
        return self._last_push_clock + 1

    def sync(self):
        """End of training: clock without pushing until the barrier
        guarantees that every worker's pushes up to this worker's last one
        are in the store (s more clocks under SSP(s), none under BSP), then
        pull. Every worker must call it. Raises RuntimeError under ASP,
        which guarantees nothing. Returns the number of extra clocks."""
        extra = 0
        if self._last_push_clock >= 0:
            while True:
                c, _low, _high, mode, s = _ops.clock_info()
                if mode == 2:
                    raise RuntimeError("SSP.sync: the job's policy is ASP, which bounds no "
                                       "staleness; switch it to bsp or ssp first")
                if (c - 1) - s >= self._last_push_clock:
                    break
                # Bounded: each clock raises c by one while s stays below the ring.
                if extra > 1 << 16:
                    raise RuntimeError("SSP.sync: staleness bound does not allow a sync")
                _ops.clock()
                extra += 1
        self.pull_apply()
        return extra
