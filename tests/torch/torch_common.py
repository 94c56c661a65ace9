# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the tests/torch scripts, which run as ranks under
serene-run (SERENE_RANK, SERENE_WORLD_SIZE, SERENE_JOB_NONCE set), or under
torchrun (RANK, WORLD_SIZE: test_pg).

gloo_init() starts torch.distributed's gloo group on the same ranks, through
a FileStore in the temporary directory named after the launch's nonce, so
two launches never share one; gloo_done() tears it down (the FileStore
removes its file when the last rank closes it).
"""
import datetime
import os
import sys
import tempfile

import torch
import torch.distributed as dist

# serene-run's variables, else torchrun's (test_pg runs under torchrun).
RANK = int(os.environ.get("SERENE_RANK", os.environ.get("RANK", "0")))
WORLD = int(os.environ.get("SERENE_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
_store_path = None
_store = None

# The synthetic classification problem of the DDP and SSP tests.
DIM, CLASSES, N_TRAIN, N_TEST = 32, 10, 4096, 2048


def cluster_dataset(noise=2.0, seed=7):
    """((x_train, y_train), (x_test, y_test)): Gaussian clusters around
    random centers, overlapping enough that accuracy stays near 80%; the
    same on every rank (seeded)."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(CLASSES, DIM, generator=g)

    def draw(n):
        y = torch.randint(0, CLASSES, (n,), generator=g)
        return centers[y] + noise * torch.randn(n, DIM, generator=g), y
    return draw(N_TRAIN), draw(N_TEST)


def log(*args):
    print(f"rank {RANK}:", *args, flush=True)


def check(cond, what):
    """Fail the test (exit 1) with a message when cond is false."""
    if not cond:
        log("FAIL:", what)
        sys.exit(1)


def expect_refused(what, fn, needle, exc=RuntimeError):
    """Fail the test unless fn() raises exc whose first line says needle."""
    try:
        fn()
    except exc as e:
        msg = str(e).splitlines()[0]
        check(needle in msg, f"{what}: message {msg!r} does not say {needle!r}")
        log(f"ok refused {what}: {msg}")
        return
    check(False, f"{what}: accepted (no {exc.__name__})")


def gloo_init(timeout_s=60):
    global _store_path
    if "SERENE_JOB_NONCE" not in os.environ:
        log("FAIL: run me under serene-run (SERENE_JOB_NONCE is not set)")
        sys.exit(1)
    _store_path = os.path.join(tempfile.gettempdir(), "serene-torch-gloo-%s-%s" % (
        os.environ.get("SERENE_JOB", "0"), os.environ["SERENE_JOB_NONCE"]))
    global _store
    _store = dist.FileStore(_store_path, WORLD)
    dist.init_process_group("gloo", store=_store, rank=RANK, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=timeout_s))


def gloo_done():
    """Leave the gloo group. FileStore removes its file itself when its last
    user (over all ranks) closes it; unlinking it here could race with the
    other rank's close, which would then create it again."""
    global _store
    dist.barrier()
    dist.destroy_process_group()
    _store = None
