# SPDX-License-Identifier: Apache-2.0
"""serene_torch's errors, in one process (no serene-run): each bad use gets
a clear RuntimeError or ValueError, and no call hangs.

- any operator before init(): "not initialized";
- a bad SERENE_* variable: SERENE_ERR_CONFIG;
- a switch that never answers (a UDP socket of ours on 127.0.0.1 that reads
  nothing): SERENE_ERR_TIMEOUT by the 300 ms deadline;
- bad arguments of init(), push/pull offsets, the SSP helper's parameters.
"""
import os
import socket
import time

import torch

import serene_torch
from torch_common import check, log


def expect(what, fn, exc, needle):
    try:
        fn()
    except exc as e:
        msg = str(e).splitlines()[0]
        check(needle in msg, f"{what}: message {msg!r} does not say {needle!r}")
        log(f"ok {what}: {msg}")
        return
    check(False, f"{what}: no {exc.__name__}")


def main():
    for k in [k for k in os.environ if k.startswith("SERENE_") and k != "SERENE_LOG_LEVEL"]:
        del os.environ[k]
    expect("allreduce_ before init", lambda: serene_torch.allreduce_(torch.ones(4)),
           RuntimeError, "not initialized")
    expect("clock before init", serene_torch.clock, RuntimeError, "not initialized")
    expect("SSP before init", lambda: serene_torch.SSP([torch.zeros(3)], lr=0.1), RuntimeError,
           "not initialized")
    expect("SSP with float64 parameters",
           lambda: serene_torch.SSP([torch.zeros(3, dtype=torch.float64)], lr=0.1), ValueError,
           "float32")

    os.environ["SERENE_RANK"] = "one"
    expect("bad SERENE_RANK", serene_torch.init, RuntimeError, "SERENE_ERR_CONFIG")
    os.environ["SERENE_RANK"] = "0"
    expect("timeout_ms 0", lambda: serene_torch.init(timeout_ms=0), RuntimeError, "timeout_ms")
    expect("store_frac_bits 31", lambda: serene_torch.init(store_frac_bits=31), RuntimeError,
           "store_frac_bits")

    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    os.environ["SERENE_SWITCH"] = "127.0.0.1:%d" % silent.getsockname()[1]
    t0 = time.monotonic()
    expect("silent switch", lambda: serene_torch.init(timeout_ms=300), RuntimeError,
           "SERENE_ERR_TIMEOUT")
    took = time.monotonic() - t0
    check(took < 30, f"init against a silent switch took {took:.1f} s")
    check(not serene_torch.is_initialized(), "a failed init left a context")
    silent.close()
    log("PASS")


if __name__ == "__main__":
    main()
