"""agentshim: run coding-agent CLIs as subprocesses, get typed events and typed turn results.

Everything importable from this module is supported public API. Names are imported on first
use, so ``import agentshim`` stays cheap.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from agentshim._version import __version__

if TYPE_CHECKING:
    from agentshim.agent import AgentSession, CliAgent
    from agentshim.core.errors import (
        AgentShimError,
        CliCheckError,
        CliExitError,
        CliNotFoundError,
        CliTimeoutError,
        ContinuityError,
        FailureKind,
        InvalidSessionIdError,
        McpConfigError,
        NoRunningTurnError,
        ProcessClosedError,
        ProviderCapabilityError,
        SchemaDialectError,
        SessionResumeError,
        SessionStateError,
        TurnCancelledError,
        TurnFailedError,
        TurnTimeoutError,
    )
    from agentshim.core.events import (
        AgentEvent,
        AgentEventHandler,
        AssistantText,
        CallbackEventHandler,
        CompositeEventHandler,
        ConsoleEventHandler,
        EventHandlerBase,
        Lifecycle,
        NullEventHandler,
        Plan,
        PlanItem,
        ProviderError,
        RawOutput,
        Reasoning,
        RunFinished,
        RunStarted,
        SessionStarted,
        Stderr,
        ToolCall,
        ToolKind,
        ToolResult,
        TurnInterrupted,
        UsageReport,
    )
    from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
    from agentshim.core.models import ModelSpec, ModelTable, normalize_model_id
    from agentshim.core.permissions import ApprovalPolicy, NativeMode, NativePermissions
    from agentshim.core.pricing import ModelPricing, PricingTable, cost_usd
    from agentshim.core.profile import (
        McpMechanism,
        OutputSchemaStyle,
        ProviderProfile,
        RenewalBudget,
        SchemaDialect,
    )
    from agentshim.core.provider import ParsedTurn, Provider, StreamParser
    from agentshim.core.turn import OutputSchema, TurnRequest, TurnResult
    from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage, TokenWeights
    from agentshim.providers import (
        DEFAULT_CATALOG,
        ProviderCatalog,
        UnknownProviderError,
        discover,
        get_provider,
        provider_names,
    )
    from agentshim.resume import ResumeLine, extract_resume, resume_command

_LAZY_NAMES = MappingProxyType(
    {
        "AgentSession": "agentshim.agent",
        "CliAgent": "agentshim.agent",
        "AgentShimError": "agentshim.core.errors",
        "CliCheckError": "agentshim.core.errors",
        "CliExitError": "agentshim.core.errors",
        "CliNotFoundError": "agentshim.core.errors",
        "CliTimeoutError": "agentshim.core.errors",
        "ContinuityError": "agentshim.core.errors",
        "FailureKind": "agentshim.core.errors",
        "InvalidSessionIdError": "agentshim.core.errors",
        "McpConfigError": "agentshim.core.errors",
        "NoRunningTurnError": "agentshim.core.errors",
        "ProcessClosedError": "agentshim.core.errors",
        "ProviderCapabilityError": "agentshim.core.errors",
        "SchemaDialectError": "agentshim.core.errors",
        "SessionResumeError": "agentshim.core.errors",
        "SessionStateError": "agentshim.core.errors",
        "TurnCancelledError": "agentshim.core.errors",
        "TurnFailedError": "agentshim.core.errors",
        "TurnTimeoutError": "agentshim.core.errors",
        "AgentEvent": "agentshim.core.events",
        "AgentEventHandler": "agentshim.core.events",
        "AssistantText": "agentshim.core.events",
        "CallbackEventHandler": "agentshim.core.events",
        "CompositeEventHandler": "agentshim.core.events",
        "ConsoleEventHandler": "agentshim.core.events",
        "EventHandlerBase": "agentshim.core.events",
        "Lifecycle": "agentshim.core.events",
        "NullEventHandler": "agentshim.core.events",
        "Plan": "agentshim.core.events",
        "PlanItem": "agentshim.core.events",
        "ProviderError": "agentshim.core.events",
        "RawOutput": "agentshim.core.events",
        "Reasoning": "agentshim.core.events",
        "RunFinished": "agentshim.core.events",
        "RunStarted": "agentshim.core.events",
        "SessionStarted": "agentshim.core.events",
        "Stderr": "agentshim.core.events",
        "ToolCall": "agentshim.core.events",
        "ToolKind": "agentshim.core.events",
        "ToolResult": "agentshim.core.events",
        "TurnInterrupted": "agentshim.core.events",
        "UsageReport": "agentshim.core.events",
        "HttpMcpServer": "agentshim.core.mcp",
        "McpServer": "agentshim.core.mcp",
        "StdioMcpServer": "agentshim.core.mcp",
        "ModelSpec": "agentshim.core.models",
        "ModelTable": "agentshim.core.models",
        "normalize_model_id": "agentshim.core.models",
        "ApprovalPolicy": "agentshim.core.permissions",
        "NativeMode": "agentshim.core.permissions",
        "NativePermissions": "agentshim.core.permissions",
        "ModelPricing": "agentshim.core.pricing",
        "PricingTable": "agentshim.core.pricing",
        "cost_usd": "agentshim.core.pricing",
        "McpMechanism": "agentshim.core.profile",
        "OutputSchemaStyle": "agentshim.core.profile",
        "ProviderProfile": "agentshim.core.profile",
        "RenewalBudget": "agentshim.core.profile",
        "SchemaDialect": "agentshim.core.profile",
        "ParsedTurn": "agentshim.core.provider",
        "Provider": "agentshim.core.provider",
        "StreamParser": "agentshim.core.provider",
        "OutputSchema": "agentshim.core.turn",
        "TurnRequest": "agentshim.core.turn",
        "TurnResult": "agentshim.core.turn",
        "CostSource": "agentshim.core.usage",
        "ProviderUsage": "agentshim.core.usage",
        "TokenUsage": "agentshim.core.usage",
        "TokenWeights": "agentshim.core.usage",
        "DEFAULT_CATALOG": "agentshim.providers",
        "ProviderCatalog": "agentshim.providers",
        "UnknownProviderError": "agentshim.providers",
        "discover": "agentshim.providers",
        "get_provider": "agentshim.providers",
        "provider_names": "agentshim.providers",
        "ResumeLine": "agentshim.resume",
        "extract_resume": "agentshim.resume",
        "resume_command": "agentshim.resume",
    }
)

__all__ = [
    "DEFAULT_CATALOG",
    "AgentEvent",
    "AgentEventHandler",
    "AgentSession",
    "AgentShimError",
    "ApprovalPolicy",
    "AssistantText",
    "CallbackEventHandler",
    "CliAgent",
    "CliCheckError",
    "CliExitError",
    "CliNotFoundError",
    "CliTimeoutError",
    "CompositeEventHandler",
    "ConsoleEventHandler",
    "ContinuityError",
    "CostSource",
    "EventHandlerBase",
    "FailureKind",
    "HttpMcpServer",
    "InvalidSessionIdError",
    "Lifecycle",
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
    "OutputSchema",
    "OutputSchemaStyle",
    "ParsedTurn",
    "Plan",
    "PlanItem",
    "PricingTable",
    "ProcessClosedError",
    "Provider",
    "ProviderCapabilityError",
    "ProviderCatalog",
    "ProviderError",
    "ProviderProfile",
    "ProviderUsage",
    "RawOutput",
    "Reasoning",
    "RenewalBudget",
    "ResumeLine",
    "RunFinished",
    "RunStarted",
    "SchemaDialect",
    "SchemaDialectError",
    "SessionResumeError",
    "SessionStarted",
    "SessionStateError",
    "Stderr",
    "StdioMcpServer",
    "StreamParser",
    "TokenUsage",
    "TokenWeights",
    "ToolCall",
    "ToolKind",
    "ToolResult",
    "TurnCancelledError",
    "TurnFailedError",
    "TurnInterrupted",
    "TurnRequest",
    "TurnResult",
    "TurnTimeoutError",
    "UnknownProviderError",
    "UsageReport",
    "__version__",
    "cost_usd",
    "discover",
    "extract_resume",
    "get_provider",
    "normalize_model_id",
    "provider_names",
    "resume_command",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY_NAMES.get(name)
    if module_name is None:
        raise AttributeError(f"module 'agentshim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
