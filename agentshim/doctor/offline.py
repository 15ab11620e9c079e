"""Point a real agent CLI at a running ``ModelServer``: its env, HOME and config files.

``offline_cli(provider, server, root=...)`` writes everything a CLI needs to talk to the
scripted server instead of a real model API under ``root`` (a throw-away directory the caller
owns and deletes), and returns an ``OfflineCli`` whose ``env`` is complete: ``HOME``, the XDG
directories, ``TMPDIR`` and each CLI's own state directory point under ``root``, so the run
never reads or writes the real home, and ``PATH`` finds the CLI and ``node``. Plug it in::

    with ModelServer(script) as server:
        cli = offline_cli("codex", server, root=tmp, bin_dir=install_dir)
        agent = CliAgent("codex", env=cli.env, model=cli.model)
        result = agent.run(TurnRequest("Say hello.", extra_args=cli.extra_args), cwd=work)

Each recipe is what its CLI needs to talk to the server (``docs/conformance.md`` lists them),
with its retry budget cut down so an error case finishes in seconds: Claude Code ``CLAUDE_CODE_MAX_RETRIES``
(and ``IS_SANDBOX=1`` when running as root, without which it refuses its permission-bypass
flag), Codex ``request_max_retries = 0``, Gemini CLI's pinned ``gemini-api-key`` auth type
(without it, a custom base URL makes it exit 41), Pi's fast retry settings.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from agentshim.core.errors import InvalidRequestError
from agentshim.doctor.model_server import ModelServer

__all__ = [
    "OFFLINE_API_KEY",
    "OFFLINE_PROVIDERS",
    "OfflineCli",
    "offline_cli",
]

#: The providers ``offline_cli`` has a recipe for.
OFFLINE_PROVIDERS = ("claude", "codex", "gemini", "opencode", "copilot", "pi")

#: The API key every CLI is given; the server accepts any key.
OFFLINE_API_KEY = "agentshim-offline-key"

#: The name of the model provider the config files define (Codex, opencode, Pi).
_PROVIDER_ID = "fake"
_FAKE_MODEL = "fake-model"
_PI_MODEL = "claude-fake-1"

#: Where PATH looks after the CLI's own directory and node's.
_SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

#: Claude Code's retry budget: keeps an error case at 2-5 seconds.
CLAUDE_MAX_RETRIES = 2


def _empty_env() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class OfflineCli:
    """What it takes to run one CLI against the scripted server.

    Attributes:
        provider: The provider name (``"codex"``, ...).
        env: The complete environment for the CLI process (pass it as ``CliAgent(env=...)``).
        home: The throw-away ``HOME`` under ``root``.
        files: Every config file written, in the order written.
        model: The model to pass as ``CliAgent(model=...)``; None leaves the CLI's default
            (which the scripted server answers for just the same).
        extra_args: Flags every turn must add (``TurnRequest.extra_args``); empty for every
            recipe so far, since the config files are enough.
        base_url: The server's base URL the CLI was pointed at.
    """

    provider: str
    env: Mapping[str, str] = field(default_factory=_empty_env)
    home: Path = Path()
    files: tuple[Path, ...] = ()
    model: str | None = None
    extra_args: tuple[str, ...] = ()
    base_url: str = ""


@dataclass(frozen=True, slots=True)
class _Recipe:
    env: Mapping[str, str]
    files: Mapping[Path, str]
    model: str | None = None
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Place:
    """The directories and server a recipe works with."""

    base_url: str
    home: Path
    running_as_root: bool


def offline_cli(
    provider: str,
    server: ModelServer | str,
    *,
    root: Path,
    bin_dir: Path | str | None = None,
    path: str | None = None,
    running_as_root: bool | None = None,
) -> OfflineCli:
    """Write ``provider``'s offline config under ``root`` and return its env and model.

    Args:
        provider: One of ``OFFLINE_PROVIDERS``.
        server: A running ``ModelServer``, or its base URL (``http://127.0.0.1:PORT``).
        root: A directory the caller owns; ``HOME`` and every config directory go under it
            (created if missing). Codex warns on every run when its home is under ``/tmp``,
            so ``TMPDIR`` points under ``root`` too.
        bin_dir: A directory holding the CLI's binary, put first on ``PATH``.
        path: The rest of ``PATH``; default: the directory of ``node`` (the JS CLIs need it)
            and the system directories. Nothing from the caller's own ``PATH`` is inherited.
        running_as_root: Whether the CLI will run as root (None: this process's user);
            Claude Code then needs ``IS_SANDBOX=1``.

    Raises:
        InvalidRequestError: ``provider`` has no offline recipe.
    """
    recipe_for = _RECIPES.get(provider)
    if recipe_for is None:
        raise InvalidRequestError(
            "provider",
            f"no offline recipe for {provider!r}",
            f"no offline recipe for provider {provider!r}; use one of "
            + ", ".join(OFFLINE_PROVIDERS),
        )
    base_url = (server if isinstance(server, str) else server.base_url).rstrip("/")
    root = Path(root).resolve()
    home = root / "home"
    tmp = root / "tmp"
    for directory in (home, tmp, *_xdg_dirs(home).values()):
        directory.mkdir(parents=True, exist_ok=True)
    as_root = _running_as_root() if running_as_root is None else running_as_root
    recipe = recipe_for(_Place(base_url=base_url, home=home, running_as_root=as_root))
    written: list[Path] = []
    for file_path, text in recipe.files.items():
        file_path.parent.mkdir(parents=True, exist_ok=True)
        file_path.write_text(text, encoding="utf-8")
        written.append(file_path)
    env = {
        **_base_env(home, tmp, _search_path(bin_dir, path)),
        **recipe.env,
    }
    return OfflineCli(
        provider=provider,
        env=MappingProxyType(env),
        home=home,
        files=tuple(written),
        model=recipe.model,
        extra_args=recipe.extra_args,
        base_url=base_url,
    )


def _running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


def _xdg_dirs(home: Path) -> dict[str, Path]:
    return {
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_STATE_HOME": home / ".local" / "state",
    }


def _search_path(bin_dir: Path | str | None, path: str | None) -> str:
    entries: list[str] = []
    if bin_dir is not None:
        entries.append(str(Path(bin_dir).resolve()))
    if path is not None:
        entries.extend(part for part in path.split(os.pathsep) if part)
    else:
        node = shutil.which("node")
        if node is not None:
            entries.append(str(Path(node).parent))
        entries.extend(_SYSTEM_PATH)
    unique = list(dict.fromkeys(entries))
    return os.pathsep.join(unique)


def _base_env(home: Path, tmp: Path, search_path: str) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "PATH": search_path,
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "NO_COLOR": "1",
    }
    env.update({name: str(directory) for name, directory in _xdg_dirs(home).items()})
    return env


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def _claude(place: _Place) -> _Recipe:
    env = {
        "ANTHROPIC_BASE_URL": place.base_url,
        "ANTHROPIC_API_KEY": OFFLINE_API_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(CLAUDE_MAX_RETRIES),
    }
    if place.running_as_root:
        # Without it, --dangerously-skip-permissions exits 1 for root.
        env["IS_SANDBOX"] = "1"
    # Print mode runs without it; the TUI would stop at onboarding and the key dialog.
    state = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [OFFLINE_API_KEY[-20:]], "rejected": []},
    }
    return _Recipe(env=env, files={place.home / ".claude.json": _json(state)})


def _codex(place: _Place) -> _Recipe:
    codex_home = place.home / ".codex"
    config = "\n".join(
        (
            f'model = "{_FAKE_MODEL}"',
            f'model_provider = "{_PROVIDER_ID}"',
            "check_for_update_on_startup = false",
            "",
            f"[model_providers.{_PROVIDER_ID}]",
            'name = "agentshim model server"',
            f"base_url = {json.dumps(place.base_url + '/v1')}",
            'wire_api = "responses"',
            'env_key = "OFFLINE_API_KEY"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "",
            "[analytics]",
            "enabled = false",
            "",
        )
    )
    env = {"CODEX_HOME": str(codex_home), "OFFLINE_API_KEY": OFFLINE_API_KEY}
    return _Recipe(env=env, files={codex_home / "config.toml": config}, model=_FAKE_MODEL)


def _gemini(place: _Place) -> _Recipe:
    settings = {
        # A custom base URL makes the CLI pick "gateway" auth, which headless mode rejects.
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        # The default of 10 attempts with backoff makes a persistent 5xx take 200 s.
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 2},
    }
    env = {
        "GEMINI_API_KEY": OFFLINE_API_KEY,
        "GOOGLE_GEMINI_BASE_URL": place.base_url,
    }
    return _Recipe(env=env, files={place.home / ".gemini" / "settings.json": _json(settings)})


def _opencode(place: _Place) -> _Recipe:
    model_ref = f"{_PROVIDER_ID}/{_FAKE_MODEL}"
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            _PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "agentshim model server",
                "options": {"baseURL": place.base_url + "/v1", "apiKey": OFFLINE_API_KEY},
                "models": {
                    _FAKE_MODEL: {
                        "name": "Fake model",
                        "tool_call": True,
                        "limit": {"context": 128000, "output": 8192},
                    }
                },
            }
        },
        "model": model_ref,
        # Each new session asks this model for a title.
        "small_model": model_ref,
        "autoupdate": False,
        "share": "disabled",
    }
    env = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}
    path = place.home / ".config" / "opencode" / "opencode.json"
    return _Recipe(env=env, files={path: _json(config)}, model=model_ref)


def _copilot(place: _Place) -> _Recipe:
    env = {
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": place.base_url + "/v1",
        "COPILOT_PROVIDER_API_KEY": OFFLINE_API_KEY,
        "COPILOT_MODEL": _FAKE_MODEL,
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_HOME": str(place.home / ".copilot"),
    }
    return _Recipe(env=env, files={}, model=_FAKE_MODEL)


def _pi(place: _Place) -> _Recipe:
    agent_dir = place.home / ".pi" / "agent"
    models = {
        "providers": {
            _PROVIDER_ID: {
                "baseUrl": place.base_url,
                "api": "anthropic-messages",
                "apiKey": OFFLINE_API_KEY,
                "models": [
                    {
                        "id": _PI_MODEL,
                        "name": "Fake Claude",
                        "reasoning": False,
                        "contextWindow": 200000,
                        "maxTokens": 8192,
                    }
                ],
            }
        }
    }
    settings = {
        # So that ``--model`` alone (no ``--provider``) finds the scripted model.
        "defaultProvider": _PROVIDER_ID,
        "defaultModel": _PI_MODEL,
        # Pi's default backoff (2, 4, 8 s over 12 requests) makes a 5xx case take 20 s.
        "retry": {
            "enabled": True,
            "maxRetries": 2,
            "baseDelayMs": 100,
            "provider": {"maxRetries": 0},
        },
    }
    env = {"PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    files = {agent_dir / "models.json": _json(models), agent_dir / "settings.json": _json(settings)}
    return _Recipe(env=env, files=files, model=_PI_MODEL)


_RECIPES: Mapping[str, Callable[[_Place], _Recipe]] = MappingProxyType(
    {
        "claude": _claude,
        "codex": _codex,
        "gemini": _gemini,
        "opencode": _opencode,
        "copilot": _copilot,
        "pi": _pi,
    }
)
