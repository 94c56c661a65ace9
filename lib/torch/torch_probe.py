# SPDX-License-Identifier: Apache-2.0
"""Configure-time probe run by lib/torch/meson.build with a candidate Python.

usage: torch_probe.py PREFIX

Prints five lines, or exits non-zero when this interpreter has no torch:
torch version, torch's include directory, its library directory,
_GLIBCXX_USE_CXX11_ABI (0 or 1), which the extension must be compiled with,
and where packages go under PREFIX: this interpreter's default purelib made
relative to PREFIX when it lies under it (Debian's /usr/local/lib/python3.X/
dist-packages for PREFIX /usr/local), else "-" (meson then asks its python
module).
"""
import os
import sys
import sysconfig

try:
    import torch
except Exception as e:  # ImportError, or a broken install
    print(f"torch_probe: {sys.executable} cannot import torch: {e}", file=sys.stderr)
    sys.exit(1)

root = os.path.dirname(os.path.realpath(torch.__file__))
print(torch.__version__)
print(os.path.join(root, "include"))
print(os.path.join(root, "lib"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
prefix = os.path.normpath(sys.argv[1]) if len(sys.argv) > 1 else ""
purelib = os.path.normpath(sysconfig.get_path("purelib"))
print(os.path.relpath(purelib, prefix) if prefix and purelib.startswith(prefix + os.sep) else "-")
