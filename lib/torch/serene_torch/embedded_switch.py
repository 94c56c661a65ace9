# SPDX-License-Identifier: Apache-2.0
"""The embedded serene-switch of a process group, as serene-run starts it.

When the "serene" process group finds no SERENE_SWITCH, its rank 0 starts
serene-switch for the job on an ephemeral loopback port and stops it when
the group is shut down (lib/launch/serene_run.c does the same for
serene-run):

- the binary: $SERENE_SWITCH_BIN, else the one the wheel installs beside
  this package (bin/serene-switch), else serene-switch on PATH;
- `--listen 127.0.0.1:0 --port-file DIR/port --job ID:N,token=env:SERENE_JOB_TOKEN`
  in a private temporary directory (mkdtemp, 0700); the token is in the
  switch's environment only, never on its command line;
- $SERENE_SWITCH_JOB_OPTS, when set, is appended to that job spec: the
  job's other options, e.g. `policy=ssp:2,store=65536` for the SSP helper
  (store=, ring=, policy=; token= is refused: the token is the group's);
- the port file is polled, bounded (SWITCH_WAIT_S); the switch runs in a
  session of its own and gets SIGTERM if its parent thread dies
  (PR_SET_PDEATHSIG), so a SIGKILLed rank 0 leaves no switch behind;
- stop(): SIGTERM, then SIGKILL after 3 s, then give up after 2 s more.
  Only the process started here is signalled.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

#: How long the switch may take to bind its socket and write its port.
SWITCH_WAIT_S = 10.0
_PR_SET_PDEATHSIG = 1


def _pdeathsig():
    # Runs in the child between fork and exec: a plain syscall wrapper only.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def find_switch():
    """The serene-switch to run, or raise RuntimeError saying how to name one."""
    path = os.environ.get("SERENE_SWITCH_BIN")
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise RuntimeError(f"serene: SERENE_SWITCH_BIN={path} is not an executable file")
        return path
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "serene-switch")
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    path = shutil.which("serene-switch")
    if not path:
        raise RuntimeError("serene: no switch configured (SERENE_SWITCH unset) and no serene-switch "
                           "to start (set SERENE_SWITCH_BIN, put it on PATH, or set SERENE_SWITCH)")
    return path


def job_opts():
    """",OPTS" from $SERENE_SWITCH_JOB_OPTS (the job's store=, ring=,
    policy=), or ""; RuntimeError for a token= (serene-switch checks the rest)."""
    opts = os.environ.get("SERENE_SWITCH_JOB_OPTS", "").strip().strip(",")
    if not opts:
        return ""
    for o in opts.split(","):
        if o.strip().startswith("token"):
            raise RuntimeError("serene: SERENE_SWITCH_JOB_OPTS may not set token= (the embedded "
                               "switch's token is the group's own)")
    return "," + opts


def _read_port(path):
    """The port written to path: >0; 0 if not (completely) written yet."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return 0
    if not text.endswith("\n"):
        return 0
    text = text[:-1]
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise RuntimeError(f"serene: the switch wrote {text!r} to its port file, not a port")
    return int(text)


class EmbeddedSwitch:
    """serene-switch for one job of `world_size` workers; .addr is HOST:PORT."""

    def __init__(self, job, world_size, token):
        binary = find_switch()
        self._dir = tempfile.mkdtemp(prefix="serene-pg.")
        port_file = os.path.join(self._dir, "port")
        env = dict(os.environ, SERENE_JOB_TOKEN=token)
        spec = f"{int(job)}:{int(world_size)},token=env:SERENE_JOB_TOKEN" + job_opts()
        argv = [binary, "--listen", "127.0.0.1:0", "--port-file", port_file, "--job", spec]
        self.proc = None
        try:
            # Its stdout goes to our stderr: the rank's stdout is the program's.
            self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                         stdout=sys.stderr.fileno(), start_new_session=True,
                                         preexec_fn=_pdeathsig)
            self.addr = self._wait_port(port_file)
        except BaseException:
            self.stop()
            raise

    def _wait_port(self, port_file):
        give_up = time.monotonic() + SWITCH_WAIT_S
        while True:
            port = _read_port(port_file)
            if port:
                return f"127.0.0.1:{port}"
            if self.proc.poll() is not None:
                raise RuntimeError(f"serene: serene-switch exited with status {self.proc.returncode} "
                                   "before reporting its port")
            if time.monotonic() >= give_up:
                raise RuntimeError(f"serene: serene-switch (pid {self.proc.pid}) did not report its "
                                   f"port within {SWITCH_WAIT_S:.0f} s")
            time.sleep(0.02)

    def stop(self):
        """Stop the switch (bounded) and remove its directory; idempotent."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                try:
                    p.wait(2)
                except subprocess.TimeoutExpired:
                    pass
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
