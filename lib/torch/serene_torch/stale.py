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
applies, in clock order, the mean gradients of every clock <= c - s to its
replica through the optimizer (optimizer.step() on them), plus those of
later clocks whose allreduce has already ended. So when the worker
computes clock c + 1 its replica has every update of clocks <= c - s
(SSP(s); s = 0 is DDP), and since every worker applies the same sums in
the same order with the same optimizer, replicas that applied the same
number of clocks are equal: after sync() (which applies every outstanding
clock) they are identical. The switch's memory for it is the allreduce's
window, whatever the model's size.

- The bound and its changes are the switch's clock-indexed policy (BSP,
  SSP(s), ASP = the ring's bound): serene-ctl or the dynamic controller
  changes it while the job runs, and every worker switches at the same
  clock. At most MAX_IN_FLIGHT clocks are in flight per worker: with a
  larger s a worker waits as with s = MAX_IN_FLIGHT - 1.
- Lookahead (the default for torch.optim.SGD): the model a worker computes
  on is its replica advanced through the clocks still in flight as the
  optimizer will advance it, with the worker's own gradient standing in
  for each clock's unknown mean: SGD's momentum (a known, identical term)
  carried exactly, the gradient estimated. As the store's SSP gives a
  worker its own updates at once; and without it, a clock's gradient is
  computed on a model that lacks the momentum steps of the clocks in
  flight, which with momentum 0.9 diverges from s = 1 on (ResNet-18,
  measured). For other optimizers the stand-in is -lr / N times the own
  gradients (lookahead="share"); lookahead=None computes on the replica.
  The replica alone takes the optimizer's steps on the sums; when no clock
  is in flight (after sync()) the model is the replica, bit for bit.
- The model's floating-point buffers (BatchNorm's running statistics)
  stay each worker's own while it trains, as DDP's with
  broadcast_buffers=False, and sync() averages them (32-bit values), so
  after it they too are the same on every replica.
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
    link) or 32 bits per value on the wire. lookahead: "auto" (the default:
    "momentum" for torch.optim.SGD, else "share"), "momentum", "share" or
    None (above). log, if given, is called as log(clock, applied) at the
    end of each step(): the clock about to be computed and how many clocks'
    sums the replica holds (tests check the bound with it)."""

    def __init__(self, model, optimizer, wire_bits=16, log=None, lookahead="auto"):
        if wire_bits not in (16, 32):
            raise ValueError(f"StaleSync: wire_bits must be 16 or 32, got {wire_bits}")
        if lookahead not in ("auto", "momentum", "share", None):
            raise ValueError(f"StaleSync: lookahead must be 'auto', 'momentum', 'share' or "
                             f"None, got {lookahead!r}")
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
        group_of = {id(p): g for g in optimizer.param_groups for p in g["params"]}
        if any(id(p) not in group_of for p in params):
            raise ValueError("StaleSync: the optimizer does not hold every parameter that "
                             "requires a gradient")
        if lookahead == "auto":
            lookahead = "momentum" if isinstance(optimizer, torch.optim.SGD) else "share"
        if lookahead == "momentum" and not isinstance(optimizer, torch.optim.SGD):
            raise ValueError("StaleSync: lookahead='momentum' follows torch.optim.SGD's step; "
                             f"the optimizer is {type(optimizer).__name__}")
        self._params, self._bufs, self._opt = params, bufs, optimizer
        self._groups = [group_of[id(p)] for p in params]  # hyperparameters read at each use
        self._n = sum(p.numel() for p in params)
        self._wire = wire_bits
        self._log = log
        self._look = lookahead
        self._world = int(_ops.world_size())
        self._replica = [p.detach().clone() for p in params] if lookahead else None
        self._free = []                          # flat buffers not in flight
        self._flight = collections.deque()       # (clock, handle, buffer, own gradient copy)
        self.clock = 0        # clocks started: the next clock's number
        self.applied = 0      # clocks whose sums the replica holds
        self.mode = None      # the policy that gated the last clock
        self.staleness = None

    def _flat(self):
        return self._free.pop() if self._free else torch.empty(self._n, dtype=torch.float32)

    def _apply_oldest(self):
        c, h, buf, own = self._flight.popleft()
        _ops.op_wait(h)  # raises the op's error (a RuntimeError)
        with torch.no_grad():
            if self._look:  # the optimizer steps the replica
                for p, r in zip(self._params, self._replica):
                    p.copy_(r)
            o = 0
            for p in self._params:
                k = p.numel()
                if p.grad is None:
                    p.grad = torch.empty_like(p)
                p.grad.copy_(buf[o:o + k].view_as(p))
                o += k
        self._opt.step()
        self._free.append(buf)
        if own is not None:
            self._free.append(own)
        self.applied = c + 1
        if self._look:
            with torch.no_grad():
                for p, r in zip(self._params, self._replica):
                    r.copy_(p)

    def _advance(self, own, o):
        """The working model (in the parameters) one clock further, with the
        flat own gradient own as that clock's mean: SGD's step with the
        momentum state carried in self._v (lookahead "momentum"), or -lr/N
        times it ("share")."""
        for i, (p, g) in enumerate(zip(self._params, self._groups)):
            k = p.numel()
            d = own[o:o + k].view_as(p)
            o += k
            lr = float(g["lr"])
            if self._look == "share":
                p.add_(d, alpha=-lr / self._world)
                continue
            wd, mu = g.get("weight_decay", 0), g.get("momentum", 0)
            if wd:
                d = d.add(p, alpha=wd)
            if mu:
                v = self._v[i]
                if v is None:
                    v = self._v[i] = d.clone()
                else:
                    v.mul_(mu).add_(d, alpha=1 - g.get("dampening", 0))
                d = d.add(v, alpha=mu) if g.get("nesterov", False) else v
            p.add_(d, alpha=-lr)

    def _rebuild(self):
        """The working model: the replica, advanced through every clock in
        flight (oldest first) from the replica's optimizer state."""
        if not self._look:
            return
        with torch.no_grad():
            for p, r in zip(self._params, self._replica):
                p.copy_(r)
            if self._look == "momentum":
                self._v = []
                for p in self._params:
                    st = self._opt.state.get(p, {})
                    mb = st.get("momentum_buffer")
                    self._v.append(None if mb is None else mb.clone())
            for _, _, _, own in self._flight:
                self._advance(own, 0)

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
        own = None
        if self._look:  # the own gradient, for the lookahead while in flight
            own = self._flat()
            own.copy_(buf)
        c = self.clock
        self._flight.append((c, _ops.stale_start(buf, "avg", self._wire), buf, own))
        self.clock = c + 1
        mode, s = _ops.stale_bound(c - 1 if c else 0)
        self.mode, self.staleness = _MODES[mode] if 0 <= mode < 3 else str(mode), s
        # Clocks <= c - s must be in the replica before clock c + 1 is
        # computed; at most MAX_IN_FLIGHT stay in flight; and what has
        # already arrived is applied too, in order.
        applied = self.applied
        while self._flight and (self._flight[0][0] <= c - s or
                                len(self._flight) >= MAX_IN_FLIGHT or
                                _ops.op_test(self._flight[0][1])):
            self._apply_oldest()
        if self._look:
            if self.applied != applied or len(self._flight) == 1:
                self._rebuild()  # a sum went in: from the replica again
            else:
                with torch.no_grad():
                    self._advance(own, 0)  # one clock more on the model as it is
        for p in self._params:
            p.grad = None
        if self._log is not None:
            self._log(self.clock, self.applied)

    def sync(self):
        """Apply every clock still in flight, and average the floating-point
        buffers: afterwards every worker that made the same number of steps
        holds the same model."""
        while self._flight:
            self._apply_oldest()
        for p in self._params:
            p.grad = None
        with torch.no_grad():
            for b in self._bufs:
                flat = b.reshape(-1).clone()
                _ops.allreduce_(flat, "avg", 32)
                b.copy_(flat.view_as(b))
