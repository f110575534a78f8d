"""A real local gpunet network for the tests, started with `gpunet up` (the repository's CLI, built by `npm run build`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parent.parent
ROOT = CLIENT.parent.parent
BIN = ROOT / "bin" / "gpunet.js"
sys.path.insert(0, str(CLIENT))


def gpunet(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUNET_URL": "", "GPUNET_API_KEY": ""}
    run = subprocess.run([shutil.which("node") or "node", str(BIN), *args], capture_output=True, text=True, env=env, timeout=timeout)
    if check and run.returncode != 0:
        raise AssertionError(f"gpunet {' '.join(args)} exited {run.returncode}\nstdout: {run.stdout}\nstderr: {run.stderr}")
    return run


@pytest.fixture(scope="session")
def network():
    """`gpunet up` with one agent of 2 GPUs and a second team (`other`); brought down afterwards, whatever happened."""
    if not (ROOT / "dist" / "libs" / "cli" / "src" / "main.js").exists():
        raise AssertionError("dist/ is missing: run `npm run build` first (npm test does)")
    work = Path(tempfile.mkdtemp(prefix="gpunet-py-"))
    data = work / "net"
    try:
        up = gpunet("up", "--data-dir", str(data), "--agents", "1", "--gpus", "2", "--team", "other", "--timeout", "180s", "--json")
        state = json.loads(up.stdout)
        state.update(json.loads((data / "state.json").read_text()))
        state["work"] = work
        yield state
    finally:
        if (data / "state.json").exists():
            gpunet("down", "--data-dir", str(data), check=False)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def client(network):
    from gpunet_client import GpunetClient

    return GpunetClient(network["url"], network["apiKey"], timeout=60)


@pytest.fixture(scope="session")
def other(network):
    from gpunet_client import GpunetClient

    team = network["otherTeams"][0]
    return GpunetClient(network["url"], team["apiKey"], timeout=60)
