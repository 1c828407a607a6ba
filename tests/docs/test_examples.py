"""The reference page's examples, blocking, run as written against recorded cassettes."""

from contextlib import closing
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def run_example(script, cassette, *args, cwd=None, env=None):
    command = [sys.executable, "-m", "omnisync.testing", "--cassette", str(ROOT / "cassettes" / cassette), str(ROOT / "examples" / script), *args]
    environment = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", **(env or {})}
    environment = {name: value for name, value in environment.items() if value is not None and name != "OPENAI_API_KEY"}
    done = subprocess.run(command, cwd=cwd or ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_conversation_the_agent_remembers():
    lines = run_example("agent_memory.py", "recorded/agent_memory.yaml").splitlines()
    roles = [line.split(" | ")[0] for line in lines if " | " in line]
    assert roles[-4:] == ["user", "assistant", "user", "assistant"]
    assert "user | My project is called Atlas." in lines and "user | What is my project called?" in lines


def test_two_processes_share_one_conversation_through_a_sqlite_file(tmp_path):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'memory.db'}"}
    run_example("remember.py", "recorded/remember_first.yaml", "My project is called Atlas and it ships on Friday.", cwd=tmp_path, env=env)
    # The second process's request must carry the first exchange, read from the file:
    # the cassette matches on the whole body, so replaying it proves the history was sent.
    run_example("remember.py", "recorded/remember_second.yaml", "When does my project ship, and what is it called?", cwd=tmp_path, env=env)
    import sqlite3

    with closing(sqlite3.connect(tmp_path / "memory.db")) as db, db:
        rows = db.execute("select role, content from omnisync_messages order by seq").fetchall()
    assert [r[0] for r in rows] == ["user", "assistant", "user", "assistant"]
    assert rows[0][1] == "My project is called Atlas and it ships on Friday."


def test_remember_defaults_to_a_sqlite_file_in_the_working_directory(tmp_path):
    run_example("remember.py", "recorded/remember_first.yaml", "My project is called Atlas and it ships on Friday.", cwd=tmp_path, env={"DATABASE_URL": None})
    assert (tmp_path / "memory.db").exists()


def test_windows_and_summaries_example_prints_the_pages_shape():
    lines = run_example("windows.py", "recorded/windows.yaml").splitlines()
    history = [line for line in lines if " | " in line][-4:]
    assert history[0].startswith("user | [CONVERSATION SUMMARY]")
    assert [line.split(" | ")[0] for line in history] == ["user", "assistant", "user", "assistant"]
    assert history[2] == "user | Who is on the team, and what is the project called?"


def test_the_pages_async_examples_run_with_only_their_import_changed(tmp_path):
    """The same cassettes as the blocking examples: the shim sends exactly the same requests."""
    page = run_example("aio_agent_memory.py", "recorded/agent_memory.yaml")
    assert page == run_example("agent_memory.py", "recorded/agent_memory.yaml")
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'memory.db'}"}
    run_example("aio_remember.py", "recorded/remember_first.yaml", "My project is called Atlas and it ships on Friday.", cwd=tmp_path, env=env)
    run_example("aio_remember.py", "recorded/remember_second.yaml", "When does my project ship, and what is it called?", cwd=tmp_path, env=env)
    windows = run_example("aio_windows.py", "recorded/windows.yaml")
    assert windows == run_example("windows.py", "recorded/windows.yaml")
    for example in ("aio_agent_memory.py", "aio_remember.py", "aio_windows.py"):
        assert "from omnisync.aio import" in (ROOT / "examples" / example).read_text()


def test_the_first_command_without_a_key_says_what_to_set_and_creates_nothing(tmp_path):
    environment = {name: value for name, value in os.environ.items() if name not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DATABASE_URL")}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "remember.py"), "hello"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "OPENAI_API_KEY" in done.stderr and "OPENAI_BASE_URL" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("example", ["remember.py", "aio_remember.py"])
def test_the_remember_examples_without_a_message_say_how_to_call_them_and_create_nothing(tmp_path, example):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / example)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f'usage: python examples/{example} "a message for the assistant"')
    assert list(tmp_path.iterdir()) == []


def test_the_streamed_example_prints_the_answer_as_recorded_from_a_real_server_and_the_aio_one_matches():
    output = run_example("stream.py", "recorded/stream.yaml")
    first = yaml.safe_load((ROOT / "cassettes" / "recorded" / "stream.yaml").read_text())["interactions"][0]
    events = [line[len("data: "):] for line in first["response"]["body"]["string"].splitlines() if line.startswith("data: {")]
    pieces = [choice["delta"].get("content") or "" for e in events for choice in json.loads(e)["choices"]]
    assert len([p for p in pieces if p]) > 5  # the server sent the answer in many pieces
    assert output.startswith("".join(pieces) + "\n[completed]\n")
    roles = [line.split(" | ")[0] for line in output.splitlines() if " | " in line]
    assert roles[-4:] == ["user", "assistant", "user", "assistant"]
    assert run_example("aio_stream.py", "recorded/stream.yaml") == output


def recorded(name):
    """The requests (as JSON) and responses of a recorded cassette."""
    interactions = yaml.safe_load((ROOT / "cassettes" / "recorded" / name).read_text())["interactions"]
    return [(json.loads(i["request"]["body"]), i["response"]) for i in interactions]


def test_a_tool_run_against_llama_cpps_server_ends_at_its_step_limit_with_no_request_refused():
    """Recorded from llama-cpp-python's server (chatml-function-calling): each request after a
    tool call carries the call with content "" (that server refuses null) and was answered 200.
    Its template drops tool results, so the small model calls again until max_steps: a known end."""
    lines = run_example("tools.py", "recorded/tools.yaml").splitlines()
    assert lines[0] == "run 1: failed | stopped after max_steps=3 model calls without a final answer"
    assert lines[1].startswith("run 2: completed | ")
    history = [line.split(" | ")[0] for line in lines[2:]]
    assert history == ["user"] + ["assistant", "tool"] * 3 + ["user", "assistant"]
    assert lines[3] == 'assistant | add({"x": 1,"y": 2})' and lines[4] == "tool | 3"
    exchanges = recorded("tools.yaml")
    assert len(exchanges) == 4 and all(response["status"]["code"] == 200 for _, response in exchanges)
    assert all(body["max_tokens"] == 128 for body, _ in exchanges)  # the examples' limit on a server of your own


def test_summaries_fold_on_llama_cpp_under_their_own_limit():
    """windows.yaml, recorded from llama.cpp: each summary call sent max_tokens 512 and finished."""
    summaries = [(body, response) for body, response in recorded("windows.yaml") if body["messages"][0]["content"].startswith("You write the running summary")]
    assert len(summaries) == 2
    for body, response in summaries:
        assert body["max_tokens"] == 512
        assert json.loads(response["body"]["string"])["choices"][0]["finish_reason"] == "stop"


def served_max_tokens(**env):
    """The output limit examples/served.py's agent sends, imported under ``env`` (only)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("OPENAI_", "OMNISYNC_"))}
    script = "import examples.served as s; print(s.agent.model_config.sampling.get('max_tokens'))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**environment, "OPENAI_API_KEY": "k", **env}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_served_example_reads_the_same_variables_as_the_others(tmp_path):
    local = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OMNISYNC_SERVE_STORE": "in_memory"}
    assert served_max_tokens(**local) == "128"  # a modest limit on a server of your own
    assert served_max_tokens(**local, OMNISYNC_MAX_TOKENS="64") == "64"
    assert served_max_tokens(OMNISYNC_SERVE_STORE="in_memory") == "None"  # OpenAI's models end their own turns
