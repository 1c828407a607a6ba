"""``omnisync serve MODULE:ATTR`` as a user runs it: a real process on a loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from helpers.serve_servers import scripted_model_server

from omnisync.errors import RemoteError
from omnisync.remote import RemoteAgent

ROOT = Path(__file__).parents[2]
TOKEN = "a-token-of-the-cli-test-0123456789"


def omnisync(*args: str, cwd: Path, env: dict[str, str] | None = None, **options) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "omnisync.cli", "serve", *args], cwd=cwd, env=environment, stderr=subprocess.PIPE, text=True, **options)


def refused(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    process = omnisync(*args, cwd=cwd, env=env)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    return stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 30) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            requests.get(url + "/healthz", timeout=1).raise_for_status()
            return time.monotonic() - started
        except requests.ConnectionError:
            time.sleep(0.05)
    raise AssertionError(f"the server did not answer within {seconds} s")


def stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    return stderr


def test_without_a_token_it_refuses_to_listen_beyond_loopback(tmp_path):
    assert "loopback only" in refused("examples.served:agent", "--host", "0.0.0.0", cwd=tmp_path, env={"OMNISYNC_SERVE_TOKENS": ""})


def test_bad_targets_and_tokens_are_usage_errors(tmp_path):
    assert "no such module" in refused("nowhere.at_all:agent", cwd=tmp_path)
    assert "MODULE:ATTR" in refused("examples.served", cwd=tmp_path)
    assert "no attribute" in refused("examples.served:nobody", cwd=tmp_path)
    (tmp_path / "tokens").write_text(f"{TOKEN} somebody_else\n")
    assert "agents served are: assistant" in refused("examples.served:agent", "--token-file", str(tmp_path / "tokens"), cwd=tmp_path)
    assert "OMNISYNC_SERVE_TOKENS, entry 1" in refused("examples.served:agent", cwd=tmp_path, env={"OMNISYNC_SERVE_TOKENS": TOKEN})
    (tmp_path / "private.py").write_text("from omnisync import OmniCoreAgent\nagent = OmniCoreAgent('p', '', {'model': 'm', 'api_key': 'k'})\n")
    assert "keep memory in their process" in refused("private:agent", "--workers", "2", cwd=tmp_path)


def test_it_starts_quickly_on_loopback_and_says_so(tmp_path):
    port = free_port()
    process = omnisync("examples.served:agent", "--port", str(port), cwd=tmp_path, env={"OMNISYNC_SERVE_TOKENS": "", "OPENAI_API_KEY": "k"})
    try:
        took = wait_until_up(f"http://127.0.0.1:{port}", process)
        assert requests.get(f"http://127.0.0.1:{port}/agents", timeout=5).json() == {"agents": ["assistant"]}
    finally:
        stderr = stop(process)
    assert "no token configured: listening on 127.0.0.1 only" in stderr
    assert took < 10, f"omnisync serve took {took:.1f} s to answer"


def test_two_workers_share_one_store_and_need_the_token(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    (tmp_path / "tokens").write_text(f"{TOKEN} *\n")
    with scripted_model_server() as model:
        env = {"OPENAI_BASE_URL": model, "OPENAI_API_KEY": "k", "OMNISYNC_SERVE_STORE": ""}
        process = omnisync("examples.served:agent", "--port", str(port), "--workers", "2", "--token-file", str(tmp_path / "tokens"), cwd=tmp_path, env=env)
        try:
            wait_until_up(base, process, seconds=60)
            assert requests.get(base + "/agents", timeout=5).status_code == 401
            with pytest.raises(RemoteError) as denied:
                RemoteAgent(base, token="not-the-token-0123456789")
            assert denied.value.status_code == 401
            with RemoteAgent(base, token=TOKEN) as agent:
                sessions = [agent.run(f"hello {n}", session_id="shared")["response"] for n in range(6)]
                assert sessions == [f"echo: hello {n}" for n in range(6)]
                assert len(agent.get_session_history("shared")) == 12  # every worker wrote to the one SQLite file
        finally:
            stderr = stop(process)
    assert "2 worker(s)" in stderr
