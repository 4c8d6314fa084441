"""The project's Streamlit configuration: no file watcher (a virtual environment
inside the project folder would flood the log with "Inotify queue overflowed":
Streamlit's watcher follows the app's folder recursively, and
``server.folderWatchBlacklist`` only filters which modules it reloads), and the
app starts with it as it is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

from conftest import wait_until

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".streamlit" / "config.toml"


def test_config_turns_the_file_watcher_off(monkeypatch):
    assert tomllib.loads(CONFIG.read_text())["server"]["fileWatcherType"] == "none"
    from streamlit import config
    monkeypatch.chdir(ROOT)   # Streamlit reads ./.streamlit/config.toml of the working folder
    config.get_config_options(force_reparse=True)
    try:
        assert config.get_option("server.fileWatcherType") == "none"
    finally:
        config.get_config_options(force_reparse=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_app_starts_with_the_projects_config(tmp_path):
    """``streamlit run app.py`` with nothing but the project's config (no
    watcher flag) answers its health check and logs no watcher trouble."""
    port = _free_port()
    log_path = tmp_path / "streamlit.log"
    env = dict(os.environ, SYNTH_WORKBENCH_OUT=str(tmp_path / "out"))
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py",
                                 "--server.port", str(port)],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/_stcore/health"

        def healthy() -> bool:
            assert proc.poll() is None, log_path.read_text()[-2000:]
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        try:
            wait_until(healthy, 60, "streamlit's health check", interval=0.3)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                assert r.status == 200
        finally:
            proc.terminate()
            proc.wait(10)
    text = log_path.read_text()
    assert "Inotify" not in text and "Traceback" not in text
