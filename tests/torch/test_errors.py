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
from torch_common import check, expect_refused, log


def main():
    for k in [k for k in os.environ if k.startswith("SERENE_") and k != "SERENE_LOG_LEVEL"]:
        del os.environ[k]
    expect_refused("allreduce_ before init", lambda: serene_torch.allreduce_(torch.ones(4)),
                   "not initialized")
    expect_refused("clock before init", serene_torch.clock, "not initialized")
    expect_refused("SSP before init", lambda: serene_torch.SSP([torch.zeros(3)], lr=0.1),
                   "not initialized")
    expect_refused("SSP with float64 parameters",
                   lambda: serene_torch.SSP([torch.zeros(3, dtype=torch.float64)], lr=0.1),
                   "float32", ValueError)

    os.environ["SERENE_RANK"] = "one"
    expect_refused("bad SERENE_RANK", serene_torch.init, "SERENE_ERR_CONFIG")
    os.environ["SERENE_RANK"] = "0"
    expect_refused("timeout_ms 0", lambda: serene_torch.init(timeout_ms=0), "timeout_ms")
    expect_refused("store_frac_bits 31", lambda: serene_torch.init(store_frac_bits=31),
                   "store_frac_bits")

    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    os.environ["SERENE_SWITCH"] = "127.0.0.1:%d" % silent.getsockname()[1]
    t0 = time.monotonic()
    expect_refused("silent switch", lambda: serene_torch.init(timeout_ms=300),
                   "SERENE_ERR_TIMEOUT")
    took = time.monotonic() - t0
    check(took < 30, f"init against a silent switch took {took:.1f} s")
    check(not serene_torch.is_initialized(), "a failed init left a context")
    silent.close()
    log("PASS")


if __name__ == "__main__":
    main()
