from __future__ import annotations

import json
import os
import shutil
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agentshim.doctor.model_server import Api, ModelServer, Rule, Text
from agentshim.doctor.offline import (
    OFFLINE_API_KEY,
    OFFLINE_PROVIDERS,
    OfflineCli,
    offline_cli,
)

SECRET = "sk-real-secret-that-must-not-leak"


@pytest.fixture
def server():
    with ModelServer([Rule(respond=Text("scripted answer"))]) as running:
        yield running


@pytest.fixture(autouse=True)
def real_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a developer's shell holds; none of it may reach the offline CLI.
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GH_TOKEN"):
        monkeypatch.setenv(name, SECRET)
    monkeypatch.setenv("CODEX_HOME", "/real/codex/home")


def _under(path: str | Path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root.resolve())


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _file(cli: OfflineCli, name: str) -> Path:
    matches = [p for p in cli.files if p.name == name]
    assert len(matches) == 1, cli.files
    return matches[0]


@pytest.mark.parametrize("provider", OFFLINE_PROVIDERS)
class TestEveryProvider:
    def test_home_and_every_state_dir_are_under_root(
        self, provider: str, server: ModelServer, tmp_path: Path
    ) -> None:
        cli = offline_cli(provider, server, root=tmp_path)
        assert cli.home == tmp_path.resolve() / "home"
        assert cli.env["HOME"] == str(cli.home)
        assert cli.home.is_dir()
        for name, value in cli.env.items():
            if name.endswith(("_HOME", "_DIR")) or name.startswith("XDG_") or name == "TMPDIR":
                assert _under(value, tmp_path), f"{name}={value} is outside root"

    def test_files_are_written_under_root_and_parse(
        self, provider: str, server: ModelServer, tmp_path: Path
    ) -> None:
        cli = offline_cli(provider, server, root=tmp_path)
        for path in cli.files:
            assert path.is_file()
            assert _under(path, cli.home)
            if path.suffix == ".json":
                assert isinstance(_read_json(path), dict)

    def test_nothing_of_the_callers_environment_leaks(
        self, provider: str, server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A caller's home of its own, so the check holds wherever the test's tmp_path lives
        # (under the real home on many machines).
        caller_home = "/nonexistent-caller-home"
        monkeypatch.setenv("HOME", caller_home)
        cli = offline_cli(provider, server, root=tmp_path)
        for name, value in cli.env.items():
            assert SECRET not in value, name
            if name != "PATH":
                assert caller_home not in value, name
        assert cli.env.get("CODEX_HOME", "") != "/real/codex/home"
        for path in cli.files:
            assert SECRET not in path.read_text(encoding="utf-8")

    def test_path_finds_the_cli_first_then_node(
        self, provider: str, server: ModelServer, tmp_path: Path
    ) -> None:
        bin_dir = tmp_path / "clis" / "bin"
        bin_dir.mkdir(parents=True)
        cli = offline_cli(provider, server, root=tmp_path / "run", bin_dir=bin_dir)
        entries = cli.env["PATH"].split(os.pathsep)
        assert entries[0] == str(bin_dir.resolve())
        node = shutil.which("node")
        if node is not None:
            assert str(Path(node).parent) in entries
        assert "/usr/bin" in entries

    def test_an_explicit_path_replaces_the_default(
        self, provider: str, server: ModelServer, tmp_path: Path
    ) -> None:
        cli = offline_cli(provider, server, root=tmp_path, bin_dir="/opt/x", path="/a:/b")
        assert cli.env["PATH"] == os.pathsep.join(("/opt/x", "/a", "/b"))

    def test_the_server_can_be_given_by_url(self, provider: str, tmp_path: Path) -> None:
        cli = offline_cli(provider, "http://127.0.0.1:5/", root=tmp_path)
        assert cli.base_url == "http://127.0.0.1:5"
        blob = " ".join(cli.env.values()) + " ".join(p.read_text() for p in cli.files)
        assert "http://127.0.0.1:5" in blob
        assert "127.0.0.1:5/" not in blob.replace("127.0.0.1:5/v1", "")

    def test_writing_twice_into_one_root_is_idempotent(
        self, provider: str, server: ModelServer, tmp_path: Path
    ) -> None:
        first = offline_cli(provider, server, root=tmp_path)
        second = offline_cli(provider, server, root=tmp_path)
        assert first == second
        assert [p.read_text() for p in first.files] == [p.read_text() for p in second.files]


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


class TestPointsAtTheServer:
    """Each URL as the CLI would build it from the config reaches the scripted server."""

    def test_claude(self, server: ModelServer, tmp_path: Path) -> None:
        cli = offline_cli("claude", server, root=tmp_path)
        answer = _post(
            cli.env["ANTHROPIC_BASE_URL"] + "/v1/messages?beta=true",
            {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
            {"x-api-key": cli.env["ANTHROPIC_API_KEY"]},
        )
        assert answer["content"][0]["text"] == "scripted answer"
        assert server.requests[-1].api is Api.ANTHROPIC_MESSAGES
        for name in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING"):
            assert cli.env[name] == "1"
        assert cli.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert int(cli.env["CLAUDE_CODE_MAX_RETRIES"]) <= 2

    def test_claude_sets_is_sandbox_only_for_root(
        self, server: ModelServer, tmp_path: Path
    ) -> None:
        as_root = offline_cli("claude", server, root=tmp_path / "a", running_as_root=True)
        as_user = offline_cli("claude", server, root=tmp_path / "b", running_as_root=False)
        assert as_root.env["IS_SANDBOX"] == "1"
        assert "IS_SANDBOX" not in as_user.env

    def test_claude_onboarding_is_seeded(self, server: ModelServer, tmp_path: Path) -> None:
        cli = offline_cli("claude", server, root=tmp_path)
        state = _read_json(_file(cli, ".claude.json"))
        assert state["hasCompletedOnboarding"] is True
        assert OFFLINE_API_KEY[-20:] in state["customApiKeyResponses"]["approved"]

    @pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
    def test_codex(self, server: ModelServer, tmp_path: Path) -> None:
        import tomllib

        cli = offline_cli("codex", server, root=tmp_path)
        config_path = _file(cli, "config.toml")
        assert config_path.parent == Path(cli.env["CODEX_HOME"])
        config = tomllib.loads(config_path.read_text())
        provider = config["model_providers"][config["model_provider"]]
        assert config["model"] == cli.model
        assert provider["wire_api"] == "responses"
        assert provider["request_max_retries"] == 0
        assert provider["stream_max_retries"] == 0
        assert config["analytics"]["enabled"] is False
        key = cli.env[provider["env_key"]]
        answer = _post(
            provider["base_url"] + "/responses",
            {"model": cli.model, "input": "hi"},
            {"authorization": f"Bearer {key}"},
        )
        assert answer["output"][0]["content"][0]["text"] == "scripted answer"
        assert server.requests[-1].api is Api.OPENAI_RESPONSES

    def test_gemini(self, server: ModelServer, tmp_path: Path) -> None:
        cli = offline_cli("gemini", server, root=tmp_path)
        settings = _read_json(_file(cli, "settings.json"))
        assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
        assert settings["general"]["maxAttempts"] <= 3
        assert _file(cli, "settings.json").parent == cli.home / ".gemini"
        answer = _post(
            cli.env["GOOGLE_GEMINI_BASE_URL"] + "/v1beta/models/gemini-x:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            {"x-goog-api-key": cli.env["GEMINI_API_KEY"]},
        )
        assert answer["candidates"][0]["content"]["parts"][0]["text"] == "scripted answer"

    def test_opencode(self, server: ModelServer, tmp_path: Path) -> None:
        cli = offline_cli("opencode", server, root=tmp_path)
        path = _file(cli, "opencode.json")
        assert path.parent == Path(cli.env["XDG_CONFIG_HOME"]) / "opencode"
        config = _read_json(path)
        provider_id, model_id = str(cli.model).split("/", 1)
        provider = config["provider"][provider_id]
        assert provider["npm"] == "@ai-sdk/openai-compatible"
        assert provider["models"][model_id]["tool_call"] is True
        assert config["model"] == config["small_model"] == cli.model
        assert cli.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
        assert cli.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
        answer = _post(
            provider["options"]["baseURL"] + "/chat/completions",
            {"model": model_id, "messages": [{"role": "user", "content": "hi"}]},
            {"authorization": f"Bearer {provider['options']['apiKey']}"},
        )
        assert answer["choices"][0]["message"]["content"] == "scripted answer"

    def test_copilot(self, server: ModelServer, tmp_path: Path) -> None:
        cli = offline_cli("copilot", server, root=tmp_path)
        assert cli.env["COPILOT_OFFLINE"] == "true"
        assert cli.env["COPILOT_MODEL"] == cli.model
        answer = _post(
            cli.env["COPILOT_PROVIDER_BASE_URL"] + "/chat/completions",
            {"model": cli.model, "messages": [{"role": "user", "content": "hi"}]},
            {"authorization": f"Bearer {cli.env['COPILOT_PROVIDER_API_KEY']}"},
        )
        assert answer["choices"][0]["message"]["content"] == "scripted answer"

    def test_pi(self, server: ModelServer, tmp_path: Path) -> None:
        cli = offline_cli("pi", server, root=tmp_path)
        agent_dir = Path(cli.env["PI_CODING_AGENT_DIR"])
        models = _read_json(agent_dir / "models.json")
        settings = _read_json(agent_dir / "settings.json")
        assert cli.extra_args == ()
        provider = models["providers"][settings["defaultProvider"]]
        assert provider["api"] == "anthropic-messages"
        assert [m["id"] for m in provider["models"]] == [cli.model] == [settings["defaultModel"]]
        assert settings["retry"]["provider"]["maxRetries"] == 0
        assert settings["retry"]["baseDelayMs"] <= 100
        assert cli.env["PI_OFFLINE"] == "1"
        answer = _post(
            provider["baseUrl"] + "/v1/messages",
            {"model": cli.model, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            {"x-api-key": provider["apiKey"]},
        )
        assert answer["content"][0]["text"] == "scripted answer"


def test_an_unknown_provider_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no offline recipe for provider 'aider'"):
        offline_cli("aider", "http://127.0.0.1:1", root=tmp_path)
    assert list(tmp_path.iterdir()) == []
