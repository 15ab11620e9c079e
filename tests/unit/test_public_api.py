from __future__ import annotations

import ast
import importlib
import re
import typing
from pathlib import Path

import pytest

import agentshim
from tests.unit.execution.child_python import modules_loaded_by

PACKAGE = Path(agentshim.__file__).parent


class TestExports:
    def test_all_names_are_importable(self) -> None:
        for name in agentshim.__all__:
            assert getattr(agentshim, name) is not None, name

    def test_nothing_private_is_exported(self) -> None:
        assert all(not n.startswith("_") or n == "__version__" for n in agentshim.__all__)

    def test_all_has_no_duplicates(self) -> None:
        assert len(set(agentshim.__all__)) == len(agentshim.__all__)

    def test_dir_lists_exactly_the_public_names(self) -> None:
        assert sorted(dir(agentshim)) == sorted(agentshim.__all__)

    def test_unknown_names_raise_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="NoSuchThing"):
            agentshim.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018

    def test_version_is_the_distribution_version(self) -> None:
        from importlib.metadata import version

        assert agentshim.__version__ == version("agentshim")

    def test_importing_the_package_imports_no_provider(self) -> None:
        assert modules_loaded_by("import agentshim", "agentshim.providers.") == []


#: The top-level namespace, pinned: a name added, renamed or dropped must change this list
#: (and get a CHANGELOG line).
PUBLIC_NAMES = [
    "DEFAULT_CATALOG",
    "Agent",
    "AgentEvent",
    "AgentEventHandler",
    "AgentSession",
    "AgentShimError",
    "ApprovalAnswered",
    "ApprovalDecision",
    "ApprovalHandler",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRequested",
    "ApprovalRequiredError",
    "AssistantText",
    "CallbackEventHandler",
    "Checkpoint",
    "CheckpointStore",
    "CliAgent",
    "CliCheckError",
    "CliDiedError",
    "CliExitError",
    "CliNotFoundError",
    "CliTimeoutError",
    "CompositeEventHandler",
    "ConsoleEventHandler",
    "Continuity",
    "ContinuityError",
    "ConversationBlobs",
    "ConversationImportError",
    "Conversation",
    "ConversationSpec",
    "ConversationLeases",
    "CostSource",
    "EventHandlerBase",
    "FailureKind",
    "FailureOutcome",
    "FileCheckpointStore",
    "HookCallbacks",
    "HookEvent",
    "HttpMcpServer",
    "InMemoryCheckpointStore",
    "FencedLeases",
    "InMemoryLeases",
    "InvalidRequestError",
    "InvalidSessionIdError",
    "LeaseHolder",
    "LeaseKeeper",
    "LeaseLostError",
    "LeaseTimeoutError",
    "Lifecycle",
    "LineTooLongError",
    "McpConfigError",
    "McpMechanism",
    "McpServer",
    "ModelPricing",
    "ModelSpec",
    "ModelTable",
    "NativeMode",
    "NativePermissions",
    "NoRunningTurnError",
    "NullEventHandler",
    "OneShotTransport",
    "OutputSchema",
    "OutputSchemaStyle",
    "ParsedTurn",
    "Plan",
    "PlanItem",
    "PostgresStore",
    "PricingTable",
    "ProcessClosedError",
    "Provider",
    "ProviderCapabilityError",
    "ProviderCatalog",
    "ProviderErrorReported",
    "ProviderProfile",
    "ProviderUsage",
    "RawOutput",
    "Readiness",
    "Reasoning",
    "RenewalBudget",
    "ResumeLine",
    "RetryPolicy",
    "ProcessSharing",
    "RunFinished",
    "RunStarted",
    "SchemaDialect",
    "SchemaDialectError",
    "Session",
    "SessionPolicy",
    "SessionResumeError",
    "SessionStarted",
    "SessionStateError",
    "Spend",
    "SpendingLimitError",
    "SpendingLimits",
    "SqliteStore",
    "Stderr",
    "StdioMcpServer",
    "StoreError",
    "SteerableConversation",
    "StreamParser",
    "TokenUsage",
    "TokenWeights",
    "Tool",
    "ToolCall",
    "ToolKind",
    "ToolResult",
    "Transport",
    "TransportKind",
    "Turn",
    "TurnCancelledError",
    "TurnFailedError",
    "TurnInterrupted",
    "TurnRequest",
    "TurnResult",
    "TurnStop",
    "TurnTicket",
    "TurnStalledError",
    "TurnTimeoutError",
    "UnknownCost",
    "UnknownProviderError",
    "UsageReport",
    "UsageScope",
    "UsageSummary",
    "summarize_usage",
    "SessionTitle",
    "BackgroundTask",
    "BackgroundTasksChanged",
    "__version__",
    "api_model_id",
    "cost_usd",
    "discover",
    "extract_resume",
    "get_provider",
    "provider_names",
    "resume_command",
    "tool",
]

#: Where each session-layer name lives: the module named for it.
HOMES = {
    "Agent": "agentshim.agent",
    "CliAgent": "agentshim.cli_agent",
    "AgentSession": "agentshim.cli_agent",
    "Session": "agentshim.session",
    "Turn": "agentshim.session",
    "TurnTicket": "agentshim.session",
    "OneShotTransport": "agentshim.oneshot",
    "RetryPolicy": "agentshim.core.retry",
    "SessionPolicy": "agentshim.core.session_policy",
    "TurnStop": "agentshim.core.conversation",
}


def _lazy_package_lists(init: Path, table: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The TYPE_CHECKING imports, the lazy-name table and ``__all__`` of a package's __init__."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    checked: dict[str, str] = {}
    lazy: dict[str, str] = {}
    names: list[str] = []
    package = init.parent.relative_to(PACKAGE.parent).as_posix().replace("/", ".")
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                module = statement.module or ""
                if statement.level:
                    module = f"{package}.{module}"
                for alias in statement.names:
                    checked[alias.asname or alias.name] = module
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target == table:
                mapping = node.value
                if isinstance(mapping, ast.Call):  # MappingProxyType({...})
                    mapping = mapping.args[0]
                lazy = ast.literal_eval(mapping)
            elif target == "__all__":
                names = ast.literal_eval(node.value)
    return checked, lazy, names


@pytest.mark.parametrize(
    ("init", "table", "eager"),
    [
        (PACKAGE / "__init__.py", "_LAZY_NAMES", {"__version__"}),
        (PACKAGE / "execution" / "__init__.py", "_SOURCES", set()),
    ],
    ids=["agentshim", "agentshim.execution"],
)
def test_the_three_name_lists_of_a_lazy_package_agree(
    init: Path, table: str, eager: set[str]
) -> None:
    checked, lazy, names = _lazy_package_lists(init, table)
    assert checked == lazy, "the TYPE_CHECKING imports and the lazy table differ"
    assert set(lazy) == set(names) - eager, "__all__ and the lazy table name different things"
    assert len(names) == len(set(names))


def test_the_top_level_namespace_is_pinned() -> None:
    assert sorted(agentshim.__all__) == sorted(PUBLIC_NAMES)


@pytest.mark.parametrize(("name", "module"), sorted(HOMES.items()))
def test_each_front_door_lives_in_the_module_named_for_it(name: str, module: str) -> None:
    assert getattr(agentshim, name).__module__ == module


#: Tier 2, the vocabularies: these modules' ``__all__`` is supported public API.
VOCABULARIES = (
    "agentshim.core.events",
    "agentshim.core.errors",
    "agentshim.core.lifecycle_kinds",
)

#: Tier 3, the extension surface for plugin and seam authors.
EXTENSION_SURFACE = (
    "agentshim.core.provider",
    "agentshim.core.profile",
    "agentshim.core.plugin",
    "agentshim.providers.catalog",
    "agentshim.core.conversation",
    "agentshim.state.checkpoints",
    "agentshim.state.leases",
    "agentshim.core.clock",
    "agentshim.transport.installed",
    "agentshim.execution",
    "agentshim.testing",
    "agentshim.testing.contracts",
    "agentshim.testing.session_contracts",
)


def _documented_tier(number: int) -> list[str]:
    """The modules the package docstring lists under tier ``number``, in its order."""
    doc = agentshim.__doc__ or ""
    start = doc.index(f"\n{number}. ")
    end = doc.find(f"\n{number + 1}. ", start)
    section = doc[start : end if end != -1 else doc.index("\n\n", start)]
    return re.findall(r":mod:`([a-z_.]+)`", section)


def test_the_package_docstring_states_the_tiers_this_test_pins() -> None:
    assert _documented_tier(2) == list(VOCABULARIES)
    assert _documented_tier(3) == list(EXTENSION_SURFACE)


@pytest.mark.parametrize("module_name", [*VOCABULARIES, *EXTENSION_SURFACE])
def test_each_tiered_module_exports_what_its_all_says(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert names, f"{module_name} declares no public names"
    assert len(names) == len(set(names))
    assert [name for name in names if name.startswith("_")] == []
    assert [name for name in names if not hasattr(module, name)] == []


def test_the_event_vocabulary_exports_every_event() -> None:
    events = importlib.import_module("agentshim.core.events")
    members = set(typing.get_args(events.AgentEvent))
    assert members, "AgentEvent is no union"
    assert {member.__name__ for member in members} <= set(events.__all__)


def test_the_error_vocabulary_exports_every_error_it_defines() -> None:
    errors = importlib.import_module("agentshim.core.errors")
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, errors.AgentShimError)
        and value.__module__ == errors.__name__
    }
    assert defined - set(errors.__all__) == set()


def test_top_level_events_and_errors_come_from_the_vocabularies() -> None:
    vocabulary = {
        name for module in VOCABULARIES for name in importlib.import_module(module).__all__
    }
    for name in agentshim.__all__:
        home = getattr(getattr(agentshim, name), "__module__", "")
        if home in ("agentshim.core.events", "agentshim.core.errors"):
            assert name in vocabulary, name


def test_the_removed_runtime_module_is_gone() -> None:
    assert not (PACKAGE / "runtime.py").exists()


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


class TestLayering:
    def test_core_and_execution_never_import_upper_layers(self) -> None:
        forbidden = (
            "agentshim.providers",
            "agentshim.cli_agent",
            "agentshim.testing",
            "agentshim.session",
            "agentshim.agent",
            "agentshim.oneshot",
        )
        offenders: list[str] = []
        for layer in ("core", "execution"):
            for path in (PACKAGE / layer).rglob("*.py"):
                for module in _imported_modules(path):
                    if module.startswith(forbidden):
                        offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
        assert offenders == []

    def test_core_never_imports_execution(self) -> None:
        offenders = [
            str(path)
            for path in (PACKAGE / "core").rglob("*.py")
            for module in _imported_modules(path)
            if module.startswith("agentshim.execution")
        ]
        assert offenders == []

    def test_every_module_uses_postponed_annotations(self) -> None:
        missing = [
            str(path.relative_to(PACKAGE))
            for path in PACKAGE.rglob("*.py")
            if "from __future__ import annotations" not in path.read_text(encoding="utf-8")
        ]
        assert missing == []
