"""What every built-in provider declares, checked once over a table with a column per provider.

A user reads these facts to choose a provider (``agentshim providers``), and the library acts
on them: where MCP servers go, how an output schema is passed, which environment variables and
files hold credentials, and the command line that resumes a conversation by hand. What only one
provider declares (Codex's native permission modes, Claude's sandbox environment) stays in
that provider's test_provider.py.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from agentshim.core.profile import McpMechanism, OutputSchemaStyle, SchemaDialect
from agentshim.mcp.secrets import resolve_references
from agentshim.providers import get_plugin, get_provider
from agentshim.providers.claude import ClaudeProvider
from agentshim.providers.codex import CodexProvider
from agentshim.providers.copilot import CopilotProvider
from agentshim.providers.gemini import GeminiProvider
from agentshim.providers.opencode import OpencodeProvider
from agentshim.providers.pi import PiProvider

PROVIDERS = ("claude", "codex", "copilot", "gemini", "opencode", "pi")
CLASSES = (
    ClaudeProvider,
    CodexProvider,
    CopilotProvider,
    GeminiProvider,
    OpencodeProvider,
    PiProvider,
)
CONFIG_FILE, FLAGS, NO_MCP = McpMechanism.CONFIG_FILE, McpMechanism.CLI_FLAGS, McpMechanism.NONE
NO_SCHEMA = OutputSchemaStyle.NONE

# One row a profile field, one column a provider (in the order of PROVIDERS).
FACTS: dict[str, tuple[Any, ...]] = {
    "name": PROVIDERS,
    "binary": PROVIDERS,
    "supports_resume": (True, True, True, True, True, True),
    "supports_reasoning_effort": (True, True, False, False, False, True),
    "mcp": (CONFIG_FILE, FLAGS, FLAGS, CONFIG_FILE, CONFIG_FILE, NO_MCP),
    "mcp_config_file": (".mcp.json", None, None, ".gemini/settings.json", "opencode.json", None),
    "output_schema": (
        OutputSchemaStyle.INLINE_JSON,
        OutputSchemaStyle.FILE_PATH,
        NO_SCHEMA,
        NO_SCHEMA,
        NO_SCHEMA,
        NO_SCHEMA,
    ),
    "schema_dialect": (SchemaDialect.OPEN, SchemaDialect.STRICT, None, None, None, None),
    "state_root_env": (
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "COPILOT_HOME",
        None,
        None,
        "PI_CODING_AGENT_DIR",
    ),
}
# Mappings are compared as dicts; container_env is read-only in the profile.
CONTAINER_ENV: tuple[dict[str, str], ...] = ({"IS_SANDBOX": "1"}, {}, {}, {}, {}, {})
# One variable each that holds a credential the CLI reads (opencode reads none from the env).
AUTH_ENV_VAR = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "COPILOT_GITHUB_TOKEN",
    "GEMINI_API_KEY",
    None,
    "ANTHROPIC_API_KEY",
)
CREDENTIAL_FILES = (
    (".claude/.credentials.json",),
    (".codex/auth.json",),
    (".copilot/config.json",),
    (".gemini/oauth_creds.json",),
    (".local/share/opencode/auth.json",),
    (".pi/agent/auth.json",),
)
# A conversation id each CLI printed, and the command line that resumes it.
RESUME_LINES = (
    "claude --resume 0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966",
    "codex resume 01a22758-303e-7462-9a22-376e1126431f",
    "copilot --resume=d8d67461-6201-4285-8233-9e4dda0071e1",
    "gemini --resume 0516902a-c752",
    "opencode --session ses_dd8a6cd86ffeX01SZ77MV3sIeY",
    "pi --session 01a2275a-1c2a-72ae-8ced-4a8fdca01c2e",
)

each_provider = pytest.mark.parametrize(
    ("column", "provider"), list(enumerate(PROVIDERS)), ids=list(PROVIDERS)
)


def profile_of(provider: str) -> Any:
    return importlib.import_module(f"agentshim.providers.{provider}").PROFILE


@each_provider
def test_declared_facts(column: int, provider: str) -> None:
    profile = profile_of(provider)
    assert {field: getattr(profile, field) for field in FACTS} == {
        field: values[column] for field, values in FACTS.items()
    }
    assert dict(profile.container_env) == CONTAINER_ENV[column]
    auth_var = AUTH_ENV_VAR[column]
    assert auth_var is None or auth_var in profile.auth_env_vars


@each_provider
def test_credentials_are_auth_files_under_the_state_dirs(column: int, provider: str) -> None:
    profile = profile_of(provider)
    assert profile.credential_files == CREDENTIAL_FILES[column]
    assert set(profile.credential_files) <= set(profile.auth_files)
    assert all(any(f.startswith(d + "/") for d in profile.state_dirs) for f in profile.auth_files)


@each_provider
def test_the_catalogue_plugin(column: int, provider: str) -> None:
    plugin = get_plugin(provider)
    assert plugin.profile is profile_of(provider)
    assert isinstance(get_provider(provider), CLASSES[column])
    command = RESUME_LINES[column]
    session_id = command.rsplit("=", 1)[-1].rsplit(" ", 1)[-1]
    assert plugin.resume_command(session_id) == command


@pytest.mark.parametrize(
    ("provider", "reference"),
    [("claude", "${NAME_1}"), ("gemini", "${NAME_1}"), ("opencode", "{env:NAME_1}")],
)
def test_an_mcp_secret_reference_reads_back_as_its_variable(provider: str, reference: str) -> None:
    style = importlib.import_module(f"agentshim.providers.{provider}.provider").REFERENCE_STYLE
    assert style("NAME_1") == reference
    env = {"NAME_1": "s3cret"}
    values = {"a": reference, "b": f"x{reference}", "c": style("OTHER")}
    assert resolve_references(values, env, style.pattern) == {
        "a": "s3cret",
        "b": f"x{reference}",  # only a whole value is a reference
        "c": style("OTHER"),  # a variable the env lacks stays as written
    }
