# SPDX-License-Identifier: Apache-2.0
"""SSP for a model of any size over the streaming allreduce (the stream mode).

    dist.init_process_group("serene")            # or serene_torch.init()
    sync = serene_torch.StaleSync(model, optimizer)
    for x, y in batches:
        F.cross_entropy(model(x), y).backward()
        sync.step()                              # instead of optimizer.step()
    sync.sync()                                  # every replica identical

Every worker keeps the whole model and its optimizer. sync.step() ends the
worker's clock c: it copies the gradients into a buffer of its own and
starts their allreduce through the switch (serene_stale_start: the mean
over the workers, 16-bit values by default), takes the staleness bound s
of the switch's policy at clock c - 1 (serene_stale_bound: answered during
clock c's compute, so never waited for; serene.h says why c - 1), and
applies, in clock order, the mean gradients of every clock <= c - s
through the optimizer (optimizer.step() on them), plus those of later
clocks whose allreduce has already ended. So when the worker computes
clock c + 1 its model has every update of clocks <= c - s (SSP(s); s = 0
is DDP), and since every worker
applies the same sums in the same order with the same optimizer, replicas
that applied the same number of clocks are equal: after sync() (which
applies every outstanding clock) they are identical. The switch's memory
for it is the allreduce's window, whatever the model's size.

- The bound and its changes are the switch's clock-indexed policy (BSP,
  SSP(s), ASP = the ring's bound): serene-ctl or the dynamic controller
  changes it while the job runs, and every worker switches at the same
  clock. At most MAX_IN_FLIGHT clocks are in flight per worker: with a
  larger s a worker waits as with s = MAX_IN_FLIGHT - 1.
- Read-my-writes (read_my_writes=True, the default): the model a worker
  computes on is its replica plus its own share of the clocks still in
  flight, -lr / N times each of its gradients (the step SGD would take for
  them), as the store's SSP gives a worker its own updates at once. The
  replica alone takes the optimizer's steps on the sums; when none is in
  flight (after sync()) the model is the replica, bit for bit. Measured on
  the paper's MLP with stragglers at s = 10 (examples/train, the same rule
  in C), without it the stream mode ends 0.6-0.7 points below the store's
  SSP. The share uses each parameter group's lr: for optimizers whose step
  is not lr times the gradient (Adam) pass read_my_writes=False.
- The model's floating-point buffers (BatchNorm's running statistics)
  travel with the gradients and are replaced by their mean when the clock
  is applied, so they too are the same on every replica (as DDP's
  broadcast of rank 0's makes them); integer buffers stay local.
- Parameters and buffers: float32, on the CPU. Gradients that are None
  count as zeros. Every worker of the job must run the same model.
"""
import collections

import torch

from . import _ops

#: Clocks whose allreduce may be in flight at once (libserene's max_ops is
#: 16, shared with a "serene" process group's own 8).
MAX_IN_FLIGHT = 8

_MODES = ("bsp", "ssp", "asp")


class StaleSync:
    """SSP over the streaming allreduce for model (an nn.Module, or an
    iterable of parameters) and its optimizer (any torch.optim optimizer
    over those parameters). wire_bits: 16 (the default: half the bytes per
    link) or 32 bits per value on the wire. log, if given, is called as
    log(clock, applied) before each clock's compute would start (that is,
    at the end of step()): the clock about to be computed and how many
    clocks' sums the model holds (tests check the bound with it)."""

    def __init__(self, model, optimizer, wire_bits=16, log=None, read_my_writes=True):
        if wire_bits not in (16, 32):
            raise ValueError(f"StaleSync: wire_bits must be 16 or 32, got {wire_bits}")
        if not _ops.is_initialized():
            raise RuntimeError("StaleSync: no Serene context: dist.init_process_group('serene') "
                               "or serene_torch.init() first")
        if isinstance(model, torch.nn.Module):
            params = [p for p in model.parameters() if p.requires_grad]
            bufs = [b for b in model.buffers() if b.is_floating_point()]
        else:
            params, bufs = [p for p in model if p.requires_grad], []
        for t in params + bufs:
            if t.dtype != torch.float32 or t.device.type != "cpu":
                raise ValueError(f"StaleSync: parameters and buffers must be float32 CPU "
                                 f"tensors, got {t.dtype} on {t.device}")
        if not params:
            raise ValueError("StaleSync: no parameter requires a gradient")
        self._params, self._bufs, self._opt = params, bufs, optimizer
        self._n_grad = sum(p.numel() for p in params)
        self._n = self._n_grad + sum(b.numel() for b in bufs)
        self._wire = wire_bits
        self._log = log
        self._rmw = bool(read_my_writes)
        if self._rmw:
            group_of = {id(p): g for g in optimizer.param_groups for p in g["params"]}
            if any(id(p) not in group_of for p in params):
                raise ValueError("StaleSync: the optimizer does not hold every parameter that "
                                 "requires a gradient")
            self._groups = [group_of[id(p)] for p in params]  # lr read at each use (schedules)
            self._world = int(_ops.world_size())
            self._replica = [p.detach().clone() for p in params]
            self._pend = torch.zeros(self._n_grad, dtype=torch.float32)
            self._own = []  # the own gradients in flight, oldest first (flat)
        self._free = []                          # flat buffers not in flight
        self._free_own = []                      # own-gradient copies not in flight
        self._flight = collections.deque()       # (clock, handle, buffer), oldest first
        self.clock = 0        # clocks started: the next clock's number
        self.applied = 0      # clocks whose sums the model holds
        self.mode = None      # the policy at the last clock started
        self.staleness = None

    def _flat(self):
        return self._free.pop() if self._free else torch.empty(self._n, dtype=torch.float32)

    def _apply_oldest(self):
        c, h, buf = self._flight.popleft()
        _ops.op_wait(h)  # raises the op's error (a RuntimeError)
        with torch.no_grad():
            if self._rmw:  # the optimizer steps the replica
                for p, r in zip(self._params, self._replica):
                    p.copy_(r)
            o = 0
            for p in self._params:
                k = p.numel()
                if p.grad is None:
                    p.grad = torch.empty_like(p)
                p.grad.copy_(buf[o:o + k].view_as(p))
                o += k
            for b in self._bufs:
                k = b.numel()
                b.copy_(buf[o:o + k].view_as(b))
                o += k
        self._opt.step()
        self._free.append(buf)
        self.applied = c + 1
        if self._rmw:
            with torch.no_grad():
                for p, r in zip(self._params, self._replica):
                    r.copy_(p)
                own = self._own.pop(0)
                if not self._flight:  # nothing of its own in flight: the replica
                    self._pend.zero_()
                else:
                    self._pend.sub_(own)
                    self._add_share()
                self._free_own.append(own)

    def _add_share(self):
        """The model: its replica (already in it) plus -lr / N times the
        own gradients in flight."""
        o = 0
        for p, g in zip(self._params, self._groups):
            k = p.numel()
            p.add_(self._pend[o:o + k].view_as(p), alpha=-float(g["lr"]) / self._world)
            o += k

    def step(self):
        """End this clock: start its gradients' allreduce, apply what the
        bound requires (and what has arrived), zero the gradients."""
        buf = self._flat()
        o = 0
        with torch.no_grad():
            for p in self._params:
                k = p.numel()
                if p.grad is None:
                    buf[o:o + k].zero_()
                else:
                    buf[o:o + k].copy_(p.grad.reshape(-1))
                o += k
            for b in self._bufs:
                k = b.numel()
                buf[o:o + k].copy_(b.reshape(-1))
                o += k
        if self._rmw:  # its own share of this clock, at once
            own = self._free_own.pop() if self._free_own else torch.empty(self._n_grad)
            own.copy_(buf[:self._n_grad])
            self._own.append(own)
            with torch.no_grad():
                self._pend.add_(own)
                o = 0
                for p, g in zip(self._params, self._groups):
                    k = p.numel()
                    p.add_(own[o:o + k].view_as(p), alpha=-float(g["lr"]) / self._world)
                    o += k
        c = self.clock
        self._flight.append((c, _ops.stale_start(buf, "avg", self._wire), buf))
        self.clock = c + 1
        mode, s = _ops.stale_bound(c - 1 if c else 0)
        self.mode, self.staleness = _MODES[mode] if 0 <= mode < 3 else str(mode), s
        # Clocks <= c - s must be in the model before clock c + 1 is
        # computed; at most MAX_IN_FLIGHT stay in flight; and what has
        # already arrived is applied too, in order.
        while self._flight and (self._flight[0][0] <= c - s or
                                len(self._flight) >= MAX_IN_FLIGHT or
                                _ops.op_test(self._flight[0][1])):
            self._apply_oldest()
        for p in self._params:
            p.grad = None
        if self._log is not None:
            self._log(self.clock, self.applied)

    def sync(self):
        """Apply every clock still in flight: afterwards every worker that
        made the same number of steps holds the same model."""
        while self._flight:
            self._apply_oldest()
        for p in self._params:
            p.grad = None
