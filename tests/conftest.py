import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_real_openai(monkeypatch):
    """Tests never reach OpenAI: no key, and the default endpoint is a local one."""
    for variable in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")


collect_ignore = ["user_project"]  # a user's project of its own, run by nox's user_project session
