"""A PEP 517 build backend for gpunet-client, standard library only.

pip builds a package in an isolated environment and installs its build requirements there from
an index; CI cannot reach PyPI, so this backend needs none (`requires = []`). It builds a pure
wheel of the `gpunet_client` package with the metadata of pyproject.toml (PEP 427, PEP 376
RECORD), and an sdist of the source tree.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gpunet_client"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _dist_name() -> str:
    return _project()["name"].replace("-", "_")


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}", f"Summary: {p['description']}", f"Requires-Python: {p['requires-python']}", f"License: {p['license']['text']}"]
    readme = ROOT / "README.md"
    body = readme.read_text() if readme.exists() else ""
    return "\n".join(lines + ["Description-Content-Type: text/markdown", "", body])


def _files() -> list[Path]:
    return sorted(p for p in (ROOT / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version = _dist_name(), _project()["version"]
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    record: list[str] = []
    path = os.path.join(wheel_directory, wheel_name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:

        def add(arcname: str, data: bytes) -> None:
            zf.writestr(zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(data)}")

        for f in _files():
            add(f.relative_to(ROOT).as_posix(), f.read_bytes())
        add(f"{info}/METADATA", _metadata().encode())
        add(f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: gpunet-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        record.append(f"{info}/RECORD,,")
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    name, version = _dist_name(), _project()["version"]
    base = f"{name}-{version}"
    path = os.path.join(sdist_directory, f"{base}.tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py", *(f.relative_to(ROOT).as_posix() for f in _files())]:
            tf.add(ROOT / rel, arcname=f"{base}/{rel}")
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        tf.addfile(ti, io.BytesIO(pkg_info))
    return os.path.basename(path)
