"""Rules every provider package follows; a per-provider suite cannot see one package dropping them."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import typing
from pathlib import Path
from types import ModuleType

import pytest

import agentshim
from agentshim import CliAgent, ToolKind
from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpDialect
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    InvalidRequestError,
    InvalidSessionIdError,
    McpConfigError,
    ProviderCapabilityError,
    SessionResumeError,
)
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    SessionStarted,
    ToolCall,
    ToolResult,
    UsageReport,
)
from agentshim.core.frames import FrameParser
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.profile import McpMechanism, OutputSchemaStyle
from agentshim.core.provider import ArgvContext
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.providers import HARNESS_CATALOG, get_plugin, provider_names
from agentshim.providers.catalog import transport_factories
from agentshim.testing import FakeExecutor, RecordingEventHandler, scripted_turn
from agentshim.testing.scripted import ToolFailure

ROOT = Path(agentshim.__file__).parent.parent
PROVIDERS = provider_names()
# The providers for a custom harness command (HARNESS_CATALOG): the same files, names and
# tests as a CLI's, but no recorded CLI output to replay, and the text one reads no frames.
GENERIC = HARNESS_CATALOG.names()
FRAME_PARSERS = (*PROVIDERS, "jsonl")
REQUIRED_FILES = (
    "__init__.py",
    "plugin.py",
    "model_data.py",
    "provider.py",
    "parser.py",
    "events.py",
    "scripted.py",
    "testing.py",
)
# Copilot CLI names the session only in its final `result` line.
NAMES_SESSION_AT_END = frozenset({"copilot"})
TEST_FILES = ("test_argv.py", "test_parser.py", "test_provider.py", "test_scripted.py")


def _title(name: str) -> str:
    return name.capitalize() if name != "opencode" else "OpenCode"


def _run(
    provider: str, *, text: str = "ok", session_id: str = "sess-1", **scripted: object
) -> tuple[RecordingEventHandler, object]:
    """One scripted turn of ``provider`` through a CliAgent: its events and its result."""
    recorder = RecordingEventHandler()
    binary = get_plugin(provider).profile.binary
    run = scripted_turn(provider, text=text, session_id=session_id, **scripted)  # type: ignore[arg-type]
    fake = FakeExecutor(run, binaries={binary: f"/usr/bin/{binary}"})
    agent = CliAgent(provider, executor=fake, env={"PATH": "/usr/bin"}, event_handlers=recorder)
    return recorder, agent.run("do it")


@pytest.mark.parametrize("provider", PROVIDERS)
class TestPackageShape:
    def test_files(self, provider: str) -> None:
        package = ROOT / "agentshim" / "providers" / provider
        missing = [f for f in REQUIRED_FILES if not (package / f).is_file()]
        assert missing == []

    def test_exports(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}")
        exported = set(module.__all__)
        for name in ("PROFILE", "scripted_lines", "resume_failure_lines"):
            assert name in exported, name
        assert any(n.endswith("Provider") for n in exported)
        assert any(n.endswith("StreamParser") for n in exported)
        for name in module.__all__:
            assert hasattr(module, name), name

    def test_plugin_declares_the_package_profile(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}")
        plugin = importlib.import_module(f"agentshim.providers.{provider}.plugin").PLUGIN
        assert plugin.profile is module.PROFILE
        assert plugin.name == provider

    def test_tests_docs_and_fixtures_exist(self, provider: str) -> None:
        tests = ROOT / "tests" / "unit" / "providers" / provider
        assert [f for f in TEST_FILES if not (tests / f).is_file()] == []
        assert (ROOT / "docs" / "providers" / f"{provider}.md").is_file()
        fixtures = ROOT / "tests" / "fixtures" / provider
        assert fixtures.is_dir()
        assert any(fixtures.glob("*.stdout.jsonl"))

    def test_mcp_config_file_matches_mechanism(self, provider: str) -> None:
        profile = get_plugin(provider).profile
        assert (profile.mcp is McpMechanism.CONFIG_FILE) == (profile.mcp_config_file is not None)
        if profile.mcp is McpMechanism.CLI_FLAGS:
            module = importlib.import_module(f"agentshim.providers.{provider}")
            assert hasattr(module, "parse_mcp_servers")

    def test_shell_and_edit_tools_have_kinds(self, provider: str) -> None:
        events = importlib.import_module(f"agentshim.providers.{provider}.events")
        assert events.tool_kind(events.SHELL_TOOL) is ToolKind.COMMAND
        assert events.tool_kind(events.EDIT_TOOL) is ToolKind.FILE_CHANGE


def _speaks_acp(provider: str) -> bool:
    """Whether the provider's long-lived transport is the shared ACP client."""
    factory = transport_factories(get_plugin(provider)).get(TransportKind.LONG_LIVED)
    return factory is not None and factory.__module__ == f"agentshim.providers.{provider}.acp"


ACP_PROVIDERS = [p for p in PROVIDERS if _speaks_acp(p)]


def test_the_agents_known_to_speak_acp_have_their_dialect() -> None:
    assert {"gemini", "opencode", "copilot"} <= set(ACP_PROVIDERS)


@pytest.mark.parametrize("provider", ACP_PROVIDERS)
def test_an_acp_provider_keeps_its_dialect_in_acp_py(provider: str) -> None:
    """Its ``acp.py`` holds ``<NAME>_ACP`` and ``acp_transport``; tests and fixtures exist."""
    module = importlib.import_module(f"agentshim.providers.{provider}.acp")
    dialect = getattr(module, f"{provider.upper()}_ACP")
    assert isinstance(dialect, AcpDialect)
    assert dialect.profile is get_plugin(provider).profile
    names = {"acp_transport", "acp_argv", "classify_rpc_error", "session_lost", "usage"}
    assert names <= set(module.__all__)
    assert (ROOT / "tests" / "unit" / "providers" / provider / "test_acp.py").is_file()
    assert any((ROOT / "tests" / "fixtures" / provider / "acp").iterdir())
    assert (ROOT / "tests" / "live" / f"test_{provider}_stream.py").is_file()
    transport = module.acp_transport(lambda: None)
    assert isinstance(transport, AcpTransport)
    assert transport.dialect is dialect


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("model", ["--yolo", "-p", "two words"])
def test_a_model_that_would_read_as_an_option_is_refused_before_anything_runs(
    provider: str, model: str
) -> None:
    binary = get_plugin(provider).profile.binary
    fake = FakeExecutor(scripted_turn(provider, text="x"), binaries={binary: f"/usr/bin/{binary}"})
    agent = CliAgent(provider, model=model, executor=fake, env={"PATH": "/usr/bin"})
    with pytest.raises(InvalidRequestError, match="model"):
        agent.run("do it")
    assert fake.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
class TestScriptedTurnsParseBack:
    def test_text_session_and_usage(self, provider: str) -> None:
        from agentshim import TokenUsage

        recorder, result = _run(
            provider,
            text="all done",
            session_id="sess-42",
            usage=TokenUsage(input_tokens=120, output_tokens=30),
        )
        assert result.text == "all done"  # type: ignore[attr-defined]
        assert result.session_id == "sess-42"  # type: ignore[attr-defined]
        assert recorder.of_type(SessionStarted) == [SessionStarted("sess-42")]
        assert recorder.of_type(AssistantText)
        assert len(recorder.of_type(UsageReport)) >= 1

    def test_tool_call_and_result_pair(self, provider: str) -> None:
        events = importlib.import_module(f"agentshim.providers.{provider}.events")
        recorder, _ = _run(
            provider, tool_calls=[(events.SHELL_TOOL, {"command": "echo hi"}, "hi\n")]
        )
        calls = recorder.of_type(ToolCall)
        results = recorder.of_type(ToolResult)
        assert len(calls) == 1
        assert len(results) == 1
        assert calls[0].kind is ToolKind.COMMAND
        assert results[0].tool_id == calls[0].tool_id
        assert "hi" in results[0].stdout
        assert not results[0].failed

    def test_a_failed_shell_call_is_a_failed_result_not_a_failed_turn(self, provider: str) -> None:
        events = importlib.import_module(f"agentshim.providers.{provider}.events")
        message = "ls: cannot access '/nowhere': No such file or directory"
        failure = ToolFailure(message, exit_code=2)
        failing = (events.SHELL_TOOL, {"command": "ls /nowhere"}, failure)
        recorder, result = _run(provider, text="it failed", tool_calls=[failing])
        (call,) = recorder.of_type(ToolCall)
        (failed,) = recorder.of_type(ToolResult)
        assert failed.tool_id == call.tool_id
        assert failed.kind is ToolKind.COMMAND
        assert failed.stdout == ""
        assert message in failed.stderr
        assert failed.exit_code is not None
        assert failed.exit_code != 0
        assert failed.failed
        assert result.text == "it failed"  # type: ignore[attr-defined]

    def test_a_failed_edit_is_a_failed_result(self, provider: str) -> None:
        events = importlib.import_module(f"agentshim.providers.{provider}.events")
        failure = ToolFailure("old_string not found in a.py")
        recorder, _ = _run(provider, tool_calls=[(events.EDIT_TOOL, {"path": "a.py"}, failure)])
        (failed,) = recorder.of_type(ToolResult)
        assert failed.kind is ToolKind.FILE_CHANGE
        assert (failed.stdout, failed.failed) == ("", True)
        # Codex prints no message for a patch that failed; the others print the failure's.
        assert failed.stderr
        if provider != "codex":
            assert "old_string not found in a.py" in failed.stderr

    def test_events_arrive_in_a_sensible_order(self, provider: str) -> None:
        recorder, _ = _run(provider)
        kinds: list[type[AgentEvent]] = [type(e) for e in recorder.events]  # type: ignore[misc]
        assert kinds.count(SessionStarted) == 1
        if provider not in NAMES_SESSION_AT_END:
            assert kinds.index(SessionStarted) < kinds.index(AssistantText)


def _recorded_events(provider: str) -> list[AgentEvent]:
    from tests.unit.providers.fixtures import FIXTURES, capture_names, load_capture

    events: list[AgentEvent] = []
    versions = sorted(p.name for p in (FIXTURES / provider).glob("recorded-*") if p.is_dir())
    for folder in ("", "recorded", *versions):
        for case in capture_names(provider, folder):
            capture = load_capture(provider, f"{folder}/{case}" if folder else case)
            parser = (
                get_plugin(provider)
                .create_provider()
                .new_parser(events.append, expect_structured=False)
            )
            for line in capture.stdout_lines:
                parser.feed_stdout(line)
            for line in capture.stderr_lines:
                parser.feed_stderr(line)
            parser.finish()
    return events


@pytest.mark.parametrize("provider", PROVIDERS)
class TestRecordedToolEvents:
    def test_recorded_tool_calls_carry_their_kind(self, provider: str) -> None:
        events_module = importlib.import_module(f"agentshim.providers.{provider}.events")
        calls = [e for e in _recorded_events(provider) if isinstance(e, ToolCall)]
        shell_calls = [c for c in calls if c.tool == events_module.SHELL_TOOL]
        assert shell_calls, "the recordings should hold at least one shell tool call"
        assert all(c.kind is ToolKind.COMMAND for c in shell_calls)
        assert all(c.kind is events_module.tool_kind(c.tool) for c in calls)


def _provider_module(provider: str) -> ModuleType:
    return importlib.import_module(f"agentshim.providers.{provider}.provider")


def _options(provider: str) -> list[str]:
    cls = type(get_plugin(provider).create_provider())
    parameters = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


@pytest.mark.parametrize("provider", PROVIDERS)
class TestSameNamesInside:
    """The same concept has the same name in every provider folder (a seventh must follow)."""

    def test_failures_module_has_classify_returning_a_failure_kind(self, provider: str) -> None:
        failures = importlib.import_module(f"agentshim.providers.{provider}.failures")
        assert "classify" in failures.__all__
        assert typing.get_type_hints(failures.classify)["return"] is FailureKind

    def test_options_are_read_only_fields_of_a_frozen_dataclass(self, provider: str) -> None:
        instance = get_plugin(provider).create_provider()
        options = _options(provider)
        assert dataclasses.is_dataclass(instance)
        assert options == [f.name for f in dataclasses.fields(instance) if f.init]
        for name in options:
            with pytest.raises(AttributeError):
                setattr(instance, name, getattr(instance, name))

    def test_a_resume_names_its_marker_and_an_unsafe_id_is_refused(self, provider: str) -> None:
        if not get_plugin(provider).profile.supports_resume:
            pytest.skip("does not resume")
        module = _provider_module(provider)
        assert isinstance(module.RESUME_MISSING_TEXT, str)
        assert "RESUME_MISSING_TEXT" in module.__all__
        instance = get_plugin(provider).create_provider()
        for unsafe in ("-x", "a b", "../x"):
            with pytest.raises(InvalidSessionIdError):
                instance.build_argv(ArgvContext(binary_path="/b", resume_session_id=unsafe))

    def test_the_marker_on_stderr_is_a_resume_failure(self, provider: str) -> None:
        if not get_plugin(provider).profile.supports_resume:
            pytest.skip("does not resume")
        marker = _provider_module(provider).RESUME_MISSING_TEXT
        instance = get_plugin(provider).create_provider()
        for stderr in (f"{marker} sess-9\n", f"warming up\nError: {marker.upper()} sess-9\n"):
            error = CliExitError(["/b"], 1, "", stderr)
            assert isinstance(instance.classify_exit(error, resumed=True), SessionResumeError)
        unrelated = CliExitError(["/b"], 1, "", "429 quota\n", kind=FailureKind.TRANSIENT)
        assert not isinstance(instance.classify_exit(unrelated, resumed=True), SessionResumeError)

    def test_mcp_servers_key_and_parse_mcp_servers(self, provider: str) -> None:
        profile = get_plugin(provider).profile
        module = _provider_module(provider)
        if profile.mcp is McpMechanism.NONE:
            assert not hasattr(module, "MCP_SERVERS_KEY")
            return
        assert isinstance(module.MCP_SERVERS_KEY, str)
        if profile.mcp is McpMechanism.CLI_FLAGS:
            server = StdioMcpServer("s", "/bin/s", ("-v",))
            installation = get_plugin(provider).create_provider().install_mcp(None, [server])
            assert module.parse_mcp_servers(installation.argv) == {"s": server}

    def test_mcp_servers_without_a_workspace_are_one_error(self, provider: str) -> None:
        if get_plugin(provider).profile.mcp is not McpMechanism.CONFIG_FILE:
            pytest.skip("writes no config file")
        instance = get_plugin(provider).create_provider()
        with pytest.raises(McpConfigError, match="no workspace"):
            instance.install_mcp(None, [StdioMcpServer("s", "/bin/s")])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_schema_or_effort_the_profile_lacks_is_refused_before_anything_runs(
    provider: str, tmp_path: Path
) -> None:
    profile = get_plugin(provider).profile
    asks: list[TurnRequest] = []
    if profile.output_schema is OutputSchemaStyle.NONE:
        asks.append(TurnRequest("x", output_schema=OutputSchema({"type": "object"}, tmp_path)))
    if not profile.supports_reasoning_effort:
        asks.append(TurnRequest("x", reasoning_effort="high"))
    if not asks:
        pytest.skip("takes both")
    binary = profile.binary
    fake = FakeExecutor([], binaries={binary: f"/usr/bin/{binary}"})
    agent = CliAgent(provider, executor=fake, env={"PATH": "/usr/bin"})
    for request in asks:
        with pytest.raises(ProviderCapabilityError, match=r"output_schema|reasoning_effort"):
            agent.run(request)
    assert fake.requests == []


def _parser_tree(provider: str) -> ast.Module:
    path = ROOT / "agentshim" / "providers" / provider / "parser.py"
    return ast.parse(path.read_text(encoding="utf-8"))


def _parser_class(provider: str) -> type:
    module = importlib.import_module(f"agentshim.providers.{provider}.parser")
    (cls,) = [
        value
        for name, value in vars(module).items()
        if name.endswith("StreamParser") and inspect.isclass(value)
    ]
    return cls


def _handler_tables(tree: ast.Module) -> list[ast.Dict]:
    """Dict literals mapping frame types to handlers (a value is ``self._on_...``)."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        and any(isinstance(v, ast.Attribute) and v.attr.startswith("_on_") for v in node.values)
    ]


def _normalized(frame_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", frame_type.lower()).strip("_")


@pytest.mark.parametrize("provider", FRAME_PARSERS)
class TestParserShape:
    """Every parser reads its frames the same way, so a new one is written the same way."""

    def test_names_its_provider(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}.parser")
        assert provider == module.PROVIDER_NAME
        assert "PROVIDER_NAME" in module.__all__

    def test_dispatches_through_the_shared_frame_loop(self, provider: str) -> None:
        cls = _parser_class(provider)
        assert issubclass(cls, FrameParser)
        # Lines are the loop's: no parser reads or decodes them itself.
        assert cls.feed_stdout is FrameParser.feed_stdout
        assert "feed_stderr" not in vars(cls)
        tree = _parser_tree(provider)
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert "parse_json_object" not in names | imported
        assert {"raw_decode", "JSONDecoder", "scan_once"}.isdisjoint(attributes | names)

    def test_handlers_are_named_for_their_frame_type(self, provider: str) -> None:
        (table,) = _handler_tables(_parser_tree(provider))
        for key, value in zip(table.keys, table.values, strict=True):
            assert isinstance(key, ast.Constant)
            assert isinstance(key.value, str)
            if isinstance(value, ast.Name):
                assert value.id == "ignore_frame", key.value
                continue
            assert isinstance(value, ast.Attribute), key.value
            family = value.attr.removeprefix("_on_")
            frame_type = _normalized(key.value)
            # _on_<type>, or _on_<family> for a family of types (codex's item.*).
            assert frame_type == family or frame_type.startswith(family + "_"), key.value

    def test_every_handler_takes_the_frame_and_the_event_list(self, provider: str) -> None:
        cls = _parser_class(provider)
        handlers = [name for name in vars(cls) if name.startswith("_on_")]
        assert handlers
        for name in handlers:
            parameters = list(inspect.signature(getattr(cls, name)).parameters)
            assert parameters == ["self", "frame", "out"], name

    def test_keeps_stderr_in_a_stderr_tail(self, provider: str) -> None:
        tree = _parser_tree(provider)
        module = importlib.import_module(f"agentshim.providers.{provider}.parser")
        # FrameParser keeps stderr in a StderrTail; a parser never reads it another way.
        assert issubclass(_parser_class(provider), FrameParser)
        assert "feed_stderr" not in vars(_parser_class(provider))
        constants = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        assert not [c for c in constants if "STDERR" in c and c != "StderrTail"], constants
        assert not hasattr(module, "_PROVIDER")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_scripted_answer_the_cli_cannot_print_is_refused(provider: str) -> None:
    if get_plugin(provider).profile.output_schema is not OutputSchemaStyle.NONE:
        pytest.skip("prints structured output")
    with pytest.raises(InvalidRequestError, match="put the JSON in text instead") as refused:
        scripted_turn(provider, text="x", structured_output={"a": 1})
    assert refused.value.field == "structured_output"


def _generic(provider: str) -> object:
    return HARNESS_CATALOG.plugin(provider)


@pytest.mark.parametrize("provider", GENERIC)
class TestGenericPackageShape:
    """A harness provider's package has a CLI provider's files and names (minus recordings)."""

    def test_files(self, provider: str) -> None:
        package = ROOT / "agentshim" / "providers" / provider
        assert [f for f in (*REQUIRED_FILES, "failures.py") if not (package / f).is_file()] == []

    def test_exports(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}")
        exported = set(module.__all__)
        assert {"PROFILE", "scripted_lines", "resume_failure_lines", "harness_plugin"} <= exported
        assert any(n.endswith("Provider") for n in exported)
        assert any(n.endswith("StreamParser") for n in exported)

    def test_plugin_declares_the_package_profile(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}")
        plugin = _generic(provider)
        assert plugin.profile is module.PROFILE  # type: ignore[attr-defined]
        assert plugin.name == provider  # type: ignore[attr-defined]

    def test_tests_and_docs_exist(self, provider: str) -> None:
        tests = ROOT / "tests" / "unit" / "providers" / provider
        assert [f for f in TEST_FILES if not (tests / f).is_file()] == []
        assert (ROOT / "docs" / "providers" / f"{provider}.md").is_file()

    def test_classify_returns_a_failure_kind(self, provider: str) -> None:
        failures = importlib.import_module(f"agentshim.providers.{provider}.failures")
        assert typing.get_type_hints(failures.classify)["return"] is FailureKind

    def test_options_are_read_only_fields_of_a_frozen_dataclass(self, provider: str) -> None:
        instance = _generic(provider).create_provider()  # type: ignore[attr-defined]
        assert dataclasses.is_dataclass(instance)
        for f in dataclasses.fields(instance):
            with pytest.raises(AttributeError):
                setattr(instance, f.name, getattr(instance, f.name))

    def test_names_its_provider(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}.parser")
        assert provider == module.PROVIDER_NAME

    def test_a_named_command_is_the_binary(self, provider: str) -> None:
        module = importlib.import_module(f"agentshim.providers.{provider}")
        plugin = module.harness_plugin("my-agent", ["--fast"])
        assert plugin.profile.binary == "my-agent"
        instance = plugin.create_provider()
        assert instance.profile.binary == "my-agent"
        argv = instance.build_argv(ArgvContext(binary_path="/bin/my-agent", extra_args=("-x",)))
        assert argv == ["/bin/my-agent", "--fast", "-x"]
