"""`pip install ./clients/python` works without a package index (CI cannot reach PyPI)."""
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parent.parent


def test_pip_installs_it_offline_into_a_fresh_environment(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HOME": str(tmp_path)}
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", str(CLIENT)], capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import gpunet_client as g; print(g.__version__, 'FeedEntry' in g.types.__all__)"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.stdout.split() == ["0.1.0", "True"], probe.stderr
