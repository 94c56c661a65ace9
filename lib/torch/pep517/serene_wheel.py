# SPDX-License-Identifier: Apache-2.0
"""serene_wheel - the PEP 517 build back end behind `pip install .`.

pyproject.toml names it (backend-path lib/torch/pep517). It needs nothing
from PyPI: meson, ninja, a C/C++ compiler, libtorch-dev and the Python that
imports torch are the build's, as for `meson setup` (./serene.sh installs
them from Debian). So pip works offline:

    python3 -m venv --system-site-packages ENV
    ENV/bin/pip install --no-index .

build_wheel configures the project in a temporary directory with the
extension's rpath $ORIGIN (-Dtorch_rpath), builds and installs it into a
staging directory (no tests, benchmarks or examples), and packs the wheel
"serene_torch":

    serene_torch/*.py, serene_torch_ops.so     (the package as in the build tree)
    serene_torch/libserene.so.0                (the library, found by $ORIGIN)
    serene_torch/bin/serene-switch             (the embedded switch a process
                                                group starts: embedded_switch.py)

The wheel is tagged for this interpreter and platform only (the extension
is built against the torch it imports). torch itself is not a requirement
pip would resolve: it is the system's (Debian's python3-torch), seen
through --system-site-packages. A progress line goes to stderr per step.
"""
import base64
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_NAME = "serene_torch"


def _say(msg):
    print(f"serene_wheel: {msg}", file=sys.stderr, flush=True)


def _version():
    """The project's version, from meson.build (its one source)."""
    with open(os.path.join(_ROOT, "meson.build"), encoding="utf-8") as f:
        m = re.search(r"^\s*version:\s*'([^']+)'", f.read(), re.M)
    if not m:
        raise RuntimeError("serene_wheel: no version: in meson.build's project()")
    return m.group(1)


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())
    return f"{impl}-{impl}-{plat}"


def _env():
    """The build's environment: this interpreter's directory first on PATH,
    so meson's probe (lib/torch/meson.build) finds the python that pip runs
    (a venv's, seeing the system's torch); without pip's build isolation
    variables, which would hide the system site-packages from it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _run(cmd):
    _say(" ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=_env(), check=False)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-8000:])
        raise RuntimeError(f"serene_wheel: `{' '.join(cmd)}` failed with status {r.returncode}")


def _find(stage, name):
    """The one file called name under the staged install."""
    hits = [os.path.join(d, name) for d, _, names in os.walk(stage) if name in names]
    if len(hits) != 1:
        raise RuntimeError(f"serene_wheel: {len(hits)} files called {name} in the install, want 1")
    return hits[0]


def _build(tmp):
    """Configure, build and install (into tmp/stage: the install rpaths are
    set then) what the wheel holds; returns {path in the wheel: file}."""
    bdir, stage = os.path.join(tmp, "build"), os.path.join(tmp, "stage")
    _run(["meson", "setup", bdir, _ROOT, "--buildtype=release", "--prefix=/usr/local",
          "-Dtorch=enabled", "-Dtorch_rpath=$ORIGIN", "-Dtests=disabled", "-Dbench=disabled",
          "-Dexamples=disabled", "-Dfuzz=disabled"])
    _run(["meson", "compile", "-C", bdir])
    _run(["meson", "install", "-C", bdir, "--no-rebuild", "--destdir", stage])
    pkg = os.path.dirname(_find(stage, "serene_torch_ops.so"))
    files = {f"{_NAME}/{n}": os.path.join(pkg, n) for n in sorted(os.listdir(pkg))
             if n.endswith(".py") or n == "serene_torch_ops.so"}
    files[f"{_NAME}/libserene.so.0"] = os.path.realpath(_find(stage, "libserene.so.0"))
    files[f"{_NAME}/bin/serene-switch"] = _find(stage, "serene-switch")
    return files


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: serene-torch\nVersion: {version}\n"
            "Summary: Serene's torch.distributed backend \"serene\" and SSP helper "
            "(in-network aggregation)\nLicense: Apache-2.0\n"
            "Requires-Python: >=3.8\n")


def _meta_files(version):
    dist = f"serene_torch-{version}.dist-info"
    return {
        f"{dist}/METADATA": _metadata(version),
        f"{dist}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: serene_wheel\n"
                          f"Root-Is-Purelib: false\nTag: {_tag()}\n"),
        f"{dist}/top_level.txt": f"{_NAME}\n",
    }


def _write_wheel(wheel_directory, files, version):
    dist = f"serene_torch-{version}.dist-info"
    name = f"serene_torch-{version}-{_tag()}.whl"
    path = os.path.join(wheel_directory, name)
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, src in sorted(files.items()):
            with open(src, "rb") as f:
                data = f.read()
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            exe = arc.endswith((".so", ".so.0")) or arc.endswith("/serene-switch")
            # A regular file's mode: pip keeps the x bits only with S_IFREG.
            info.external_attr = (stat.S_IFREG | (0o755 if exe else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append(_record_line(arc, data))
        for arc, text in _meta_files(version).items():
            z.writestr(arc, text)
            record.append(_record_line(arc, text.encode()))
        record.append(f"{dist}/RECORD,,")
        z.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    _say(f"wrote {path}")
    return name


# ---- the PEP 517 hooks ---------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The dist-info alone, so pip does not build twice."""
    version = _version()
    for arc, text in _meta_files(version).items():
        path = os.path.join(metadata_directory, arc)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return f"serene_torch-{version}.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    with tempfile.TemporaryDirectory(prefix="serene-wheel.") as tmp:
        files = _build(tmp)
        return _write_wheel(wheel_directory, files, version)


def build_sdist(sdist_directory, config_settings=None):
    """The tracked source tree (git ls-files) as NAME-VERSION.tar.gz."""
    import tarfile
    version = _version()
    base = f"serene_torch-{version}"
    out = subprocess.run(["git", "-C", _ROOT, "ls-files"], stdout=subprocess.PIPE, text=True,
                         check=True).stdout.split("\n")
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in filter(None, out):
            t.add(os.path.join(_ROOT, rel), arcname=f"{base}/{rel}", recursive=False)
        pkg_info = os.path.join(tempfile.mkdtemp(prefix="serene-sdist."), "PKG-INFO")
        with open(pkg_info, "w", encoding="utf-8") as f:
            f.write(_metadata(version))
        t.add(pkg_info, arcname=f"{base}/PKG-INFO")
        shutil.rmtree(os.path.dirname(pkg_info))
    return name
