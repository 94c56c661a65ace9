# SPDX-License-Identifier: Apache-2.0
"""The torch.distributed backend "serene": a c10d ProcessGroup in Python.

    import serene_torch                          # registers the backend
    dist.init_process_group("serene")            # torchrun's env:// rendezvous
    model = DDP(model)                           # gradients summed in the switch

- allreduce and allreduce_coalesced of float32, float16 and bfloat16,
  dense, contiguous CPU tensors with ReduceOp.SUM or ReduceOp.AVG go
  through libserene: the 16-bit types as 16-bit values on the wire (what
  DDP's fp16_compress_hook and bf16_compress_hook send), float32 as
  SERENE_WIRE_BITS says (32 by default, 16 halves the bytes per link);
  everything else (other collectives, dtypes, ops, devices) is delegated
  to a Gloo process group built on the same store, so any torch.distributed
  program runs unchanged. Which way a call goes depends only on what every
  rank passes (dtype, op, layout), so all ranks choose alike.
- Collectives are paired across ranks by the order they are started in,
  as Gloo's are: a hook that starts collectives from completion callbacks
  (PowerSGD's) starts them in an order that may differ between ranks, and
  the switch then answers SERENE_ERR_MISMATCH (a RuntimeError out of
  backward(); the group is unusable after it), never a wrong sum.
- Asynchronous: allreduce starts the operation (serene_allreduce_start)
  and returns a Work at once; libserene's data-path thread carries it on
  while the caller goes on (DDP: backward computes the next bucket). One
  waiter thread per group collects the ops in order (serene_op_wait, GIL
  released) and completer threads complete each Work's future (and run
  its callbacks, which may start and wait for more allreduces). At most
  MAX_IN_FLIGHT ops are open; a start beyond that waits for the oldest
  first (but not one from a callback).
- Rendezvous through the c10d store handed to the backend: rank 0
  publishes the switch (SERENE_SWITCH, or the embedded serene-switch it
  starts when none is set: embedded_switch.py), the job id (SERENE_JOB,
  default 0), a fresh nonce, and the job's admission token (SERENE_JOB_TOKEN,
  or the embedded switch's fresh one); every rank then joins with them.
  If rank 0 fails to set up, it publishes why, and the others raise it.
- One libserene context per process (serene_torch's), so one "serene"
  group per process: new_group(backend="serene") beside it is refused
  (use gloo subgroups). shutdown() (also when the group is garbage
  collected, or at exit) waits for open ops, leaves the job, and on rank 0
  waits (bounded) for the other ranks to leave before stopping the
  embedded switch.
"""
import collections
import concurrent.futures
import datetime
import os
import queue
import secrets
import threading
import weakref

import torch
import torch.distributed as dist

from . import _ops
from .embedded_switch import EmbeddedSwitch

#: Ops open at once (libserene's max_ops is 16).
MAX_IN_FLIGHT = 8
#: How long rank 0 waits for the other ranks to leave before stopping its switch.
LEAVE_WAIT_S = 10.0
_KEY = "serene/"

# Collectives that go to Gloo as they are (name on ProcessGroup).
_DELEGATED = ("broadcast", "allgather", "allgather_coalesced", "_allgather_base", "gather",
              "scatter", "reduce", "reduce_scatter", "_reduce_scatter_base", "alltoall",
              "alltoall_base", "barrier", "monitored_barrier", "send", "recv", "recv_anysource")


class _Work(dist._Work):
    """A Work completed by the group's waiter thread through its future."""

    def __init__(self, fut, result):
        super().__init__()
        self._fut = fut
        self._result = result

    def wait(self, timeout=None):  # the op's own deadline bounds it (SERENE_TIMEOUT_MS)
        self._fut.wait()  # raises the op's error
        return True

    def get_future(self):
        return self._fut

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        if not self._fut.done():
            return False
        try:
            self._fut.value()
        except Exception:
            return False
        return True

    def exception(self):
        try:
            self._fut.value()
        except Exception as e:
            return e
        return None

    def result(self):
        self._fut.wait()
        return self._result

    def synchronize(self):
        pass


#: Threads that complete futures (and so run their callbacks). A callback
#: may start an allreduce and wait for it (PowerSGD's hook does): it blocks
#: its thread until another one completes that op. Every blocked callback
#: waits for an op in flight, of which libserene allows max_ops (16), so
#: one thread more than that always leaves one free: no deadlock.
COMPLETERS = 17
_in_callback = threading.local()


class _Waiter:
    """The thread that waits for the group's ops, in start order, and hands
    each to a completer thread that completes its future (the data path
    does the work meanwhile)."""

    def __init__(self):
        self._q = queue.Queue()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=COMPLETERS, thread_name_prefix="serene-pg-complete")
        self._thread = threading.Thread(target=self._run, name="serene-pg-waiter", daemon=True)
        self._thread.start()

    def put(self, handle, fut, result, after):
        self._q.put((handle, fut, result, after))

    @staticmethod
    def _complete(fut, result, after, err):
        _in_callback.active = True
        try:
            if err is None and after is not None:
                try:
                    after()
                except Exception as e:
                    err = e
            if err is not None:
                fut.set_exception(err)
            else:
                fut.set_result(result)
        finally:
            _in_callback.active = False

    def _run(self):
        while True:
            item = self._q.get()
            if item is None:
                self._pool.shutdown(wait=True)
                return
            handle, fut, result, after = item
            err = None
            try:
                _ops.op_wait(handle)
            except Exception as e:  # the Work's waiter gets it
                err = e
            self._pool.submit(self._complete, fut, result, after, err)

    def stop(self, timeout):
        self._q.put(None)
        self._thread.join(timeout)


class _Pipeline:
    """Starts allreduces and hands them to a _Waiter, at most MAX_IN_FLIGHT
    open at once (a start beyond that first waits for the oldest). Used by
    each ProcessGroupSerene and by the DDP hook (ddp.py's one pipeline):
    two pipelines keep at most 2 * MAX_IN_FLIGHT = max_ops open."""

    def __init__(self):
        self._lock = threading.Lock()
        self._open = collections.deque()  # futures of the ops started, oldest first
        self._waiter = _Waiter()

    def start(self, flat, op, result, after=None):
        """Start the allreduce of flat (in place) and return a
        torch.futures.Future that the waiter completes with result (after
        calling after()), or with the op's error. flat must stay alive and
        untouched until then. Raises what allreduce_start raises.

        A start beyond MAX_IN_FLIGHT first waits for the oldest op, outside
        the lock, so that a completer thread's callback that starts an
        allreduce (a hook's .then(), PowerSGD's) is never stuck behind it.
        A start from a callback never waits (the op it would wait for may
        need this very thread); libserene's max_ops bounds those
        (SERENE_ERR_BUSY)."""
        in_callback = getattr(_in_callback, "active", False)
        while True:
            with self._lock:
                while self._open and self._open[0].done():
                    self._open.popleft()
                if len(self._open) < MAX_IN_FLIGHT or in_callback:
                    handle = _ops.allreduce_start(flat, op)
                    fut = torch.futures.Future()
                    self._open.append(fut)
                    self._waiter.put(handle, fut, result, after)
                    return fut
                oldest = self._open[0]
            try:
                oldest.wait()
            except Exception:
                pass  # its own future reports it

    def stop(self, timeout):
        """Let the waiter finish the open ops, then end its thread."""
        self._waiter.stop(timeout)


def _serene_op(opts):
    """"sum" or "avg" for the reduce ops libserene does, else None."""
    op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
    if op == dist.ReduceOp.SUM:
        return "sum"
    if hasattr(dist.ReduceOp, "AVG") and op == dist.ReduceOp.AVG:
        return "avg"
    return None


_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _serene_tensor(t):
    return (t.dtype in _DTYPES and t.device.type == "cpu" and t.layout == torch.strided
            and t.is_contiguous())


class ProcessGroupSerene(dist.ProcessGroup):
    """c10d ProcessGroup: allreduce in the switch, the rest through Gloo."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        if _ops.is_initialized():
            raise RuntimeError("serene: this process already has a Serene context (another "
                               "'serene' group, or serene_torch.init()); one per process: use "
                               "gloo for subgroups")
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo", store), rank, size, timeout)
        self._store = store
        self._switch = None
        self._lock = threading.Lock()
        # A Work returned to C++ (DDP's reducer) keeps its Python methods
        # (get_future) only while its Python object lives: the last few are
        # held here, as C++ asks for the future right after allreduce returns.
        self._recent = collections.deque(maxlen=4 * MAX_IN_FLIGHT)
        self._pipe = None
        try:
            self._join(store, rank, size, timeout)
            self._pipe = _Pipeline()
        except BaseException:
            if self._switch is not None:
                self._switch.stop()
            raise
        self._finalizer = weakref.finalize(self, _shutdown, self._pipe, store, rank, size,
                                           self._switch)

    # ---- rendezvous ----------------------------------------------------

    def _publish(self, store, size):
        """Rank 0: the job every rank joins, as a dict of SERENE_* values."""
        job = os.environ.get("SERENE_JOB", "0")
        switch = os.environ.get("SERENE_SWITCH")
        token = os.environ.get("SERENE_JOB_TOKEN", "")
        if not switch:
            local = os.environ.get("LOCAL_WORLD_SIZE")
            if local is not None and int(local) != size:
                raise RuntimeError(f"serene: SERENE_SWITCH is unset and the {size} ranks are not "
                                   f"all on this host (LOCAL_WORLD_SIZE={local}): the embedded "
                                   "switch listens on loopback; start serene-switch and set "
                                   "SERENE_SWITCH")
            token = "%016x" % (secrets.randbits(64) or 1)
            self._switch = EmbeddedSwitch(job, size, token)
            switch = self._switch.addr
        return {"SERENE_SWITCH": switch, "SERENE_JOB": job,
                "SERENE_JOB_NONCE": str(secrets.randbits(32) or 1), "SERENE_JOB_TOKEN": token}

    def _join(self, store, rank, size, timeout):
        names = ("SERENE_SWITCH", "SERENE_JOB", "SERENE_JOB_NONCE", "SERENE_JOB_TOKEN")
        if rank == 0:
            try:
                job = self._publish(store, size)
            except Exception as e:
                store.set(_KEY + "error", "rank 0: " + str(e).replace("serene: ", "", 1))
                store.set(_KEY + "ready", "0")
                raise
            for k in names:
                store.set(_KEY + k, job[k])
            store.set(_KEY + "ready", "1")  # last: the others read after it
        else:
            store.wait([_KEY + "ready"], timeout)
            if store.get(_KEY + "ready") != b"1":
                raise RuntimeError("serene: " + store.get(_KEY + "error").decode())
            job = {k: store.get(_KEY + k).decode() for k in names}
        # The context reads its job from the environment (the token has no
        # config field): these replace what the launcher set.
        os.environ.update(SERENE_RANK=str(rank), SERENE_WORLD_SIZE=str(size))
        for k in names[:3]:
            os.environ[k] = job[k]
        if job["SERENE_JOB_TOKEN"]:
            os.environ["SERENE_JOB_TOKEN"] = job["SERENE_JOB_TOKEN"]
        else:
            os.environ.pop("SERENE_JOB_TOKEN", None)
        _ops.init(-1, -1)

    # ---- allreduce through the switch -----------------------------------

    def _start(self, flat, op, result, after=None):
        with self._lock:  # the Work is kept in _recent in start order
            work = _Work(self._pipe.start(flat, op, result, after), result)
            self._recent.append(work)
        return work

    def allreduce(self, tensors, opts=None):
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        op = _serene_op(opts)
        if op is None or len(tensors) != 1 or not _serene_tensor(tensors[0]):
            return self._gloo.allreduce(tensors, opts if opts is not None else
                                        dist.AllreduceOptions())
        return self._start(tensors[0], op, tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        op = _serene_op(opts)
        if (op is None or not tensors or not all(_serene_tensor(t) for t in tensors)
                or len({t.dtype for t in tensors}) != 1):
            return self._gloo.allreduce_coalesced(tensors, opts if opts is not None else
                                                  dist.AllreduceCoalescedOptions())
        flat = torch.cat([t.reshape(-1) for t in tensors])

        def copy_back():
            o = 0
            for t in tensors:
                n = t.numel()
                t.copy_(flat[o:o + n].view_as(t))
                o += n
        return self._start(flat, op, tensors, copy_back)

    def getBackendName(self):
        return "serene"

    def shutdown(self):
        """Wait for open ops, leave the job, stop rank 0's embedded switch
        (after the other ranks left, or LEAVE_WAIT_S). Idempotent; also run
        when the group is collected or at exit."""
        self._finalizer()


def _delegate(name):
    def call(self, *args, **kwargs):
        return getattr(self._gloo, name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = f"{name}: delegated to the group's Gloo process group."
    return call


for _name in _DELEGATED:
    setattr(ProcessGroupSerene, _name, _delegate(_name))


def _shutdown(pipe, store, rank, size, switch):
    if pipe is not None:
        pipe.stop(60)
    _ops.finalize()
    try:
        store.add(_KEY + "left", 1)
        if switch is not None:
            give_up = datetime.datetime.now() + datetime.timedelta(seconds=LEAVE_WAIT_S)
            while store.add(_KEY + "left", 0) < size and datetime.datetime.now() < give_up:
                threading.Event().wait(0.05)
    except Exception:
        pass  # the store is gone (launcher ended): nobody is left to wait for
    if switch is not None:
        switch.stop()


def create(store, rank, size, timeout):
    """The creator torch.distributed calls for backend "serene"."""
    return ProcessGroupSerene(store, rank, size, timeout)


def register():
    """Register backend "serene" with torch.distributed (once)."""
    if dist.is_available() and "SERENE" not in dist.Backend._plugins:
        dist.Backend.register_backend("serene", create)
