"""The long-lived conversation contract, run on every long-lived transport's peer fake.

One class per transport (and per shared-process mode): each says how its fake plays the
contract's turns and how its transport is built; every scenario is the shipped suite's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpDialect
from agentshim.core.conversation import Transport
from agentshim.core.permissions import NativePermissions
from agentshim.execution.process import SpawnRequest
from agentshim.providers import get_plugin
from agentshim.providers.acp import AcpAgentConfig, acp_plugin
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.claude.stream_transport import ClaudeStreamTransport
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.providers.codex.provider import CodexProvider
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.providers.pi.provider import PiProvider
from agentshim.providers.pi.rpc_transport import PiRpcTransport
from agentshim.testing import FakeExecutor
from agentshim.testing import acp as fake_acp
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.clock import FakeClock
from agentshim.testing.codex_app_server import CodexAppServerPeers, CodexPeerTurn
from agentshim.testing.long_lived_contract import FakePeerContract, LongLivedCapability
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from agentshim.testing.process import FakePeer
from agentshim.testing.session_contracts import ContractTurn
from agentshim.transport.conversation import ProcessOptions
from agentshim.transport.installed import InstalledCli
from agentshim.transport.shared import ProcessSharing

Peers = Callable[[SpawnRequest], FakePeer]
TOUCH = "touch contract.txt"


def on(executor: FakeExecutor, provider: object, binary: str) -> InstalledCli:
    """The installed CLI ``binary`` of ``provider``, spawned on ``executor``."""
    return InstalledCli(
        provider=provider,  # type: ignore[arg-type]
        executor=executor,
        binary_path=f"/usr/bin/{binary}",
        env={"PATH": "/usr/bin"},
    )


class TestClaudeStream(FakePeerContract):
    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return ClaudeStreamPeers(
            ClaudePeerTurn(
                t.text, hang=t.hang, ask=t.ask, tool="Bash", tool_input={"command": TOUCH}
            )
            if t.ask
            else ClaudePeerTurn(t.text, hang=t.hang)
            for t in turns
        )

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        return ClaudeStreamTransport(on(executor, ClaudeProvider(), "claude"), **options)


def codex_peers(turns: Sequence[ContractTurn]) -> CodexAppServerPeers:
    return CodexAppServerPeers(
        CodexPeerTurn(t.text, hang=t.hang, command=TOUCH if t.ask else None, approve=t.ask)
        for t in turns
    )


class TestCodexAppServer(FakePeerContract):
    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return codex_peers(turns)

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        context = on(executor, CodexProvider(), "codex")
        return CodexAppServerTransport(context, reap=lambda marker: 0, **options)


class TestCodexAppServerSharedProcess(TestCodexAppServer):
    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        context = on(executor, CodexProvider(), "codex")
        return CodexAppServerTransport(
            context, reap=lambda marker: 0, sharing=ProcessSharing(), **options
        )


class TestPiRpc(FakePeerContract):
    capabilities = LongLivedCapability.ALL & ~LongLivedCapability.APPROVALS  # no approval flow

    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return PiRpcPeers(PiPeerTurn(t.text, hang=t.hang) for t in turns)

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        return PiRpcTransport(on(executor, PiProvider(), "pi"), **options)

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.read_only()


class AcpContract(FakePeerContract):
    """The contract on an ACP agent: ``provider`` with ``dialect``, faked with ``quirks``."""

    capabilities = LongLivedCapability.ALL & ~LongLivedCapability.STEER  # ACP has no steer
    provider = "gemini"
    dialect: AcpDialect = GEMINI_ACP
    quirks: fake_acp.AcpQuirks = fake_acp.GEMINI_QUIRKS
    sharing: ProcessSharing | None = None

    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return fake_acp.AcpPeers(
            (
                fake_acp.AcpPeerTurn(t.text, hang=t.hang, tool=TOUCH if t.ask else None, ask=t.ask)
                for t in turns
            ),
            quirks=self.quirks,
        )

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        plugin = get_plugin(self.provider)
        context = on(executor, plugin.create_provider(), plugin.profile.binary)
        # Gemini waits out the minute of a session it loads; on a fake clock that wait is free.
        return AcpTransport(
            context, self.dialect, sharing=self.sharing, waits=FakeClock(), **options
        )


class TestGeminiAcp(AcpContract):
    pass


class TestOpencodeAcp(AcpContract):
    provider = "opencode"
    dialect = OPENCODE_ACP
    quirks = fake_acp.OPENCODE_QUIRKS


class TestCopilotAcp(AcpContract):
    provider = "copilot"
    dialect = COPILOT_ACP
    quirks = fake_acp.COPILOT_QUIRKS


class TestGeminiAcpSharedProcess(AcpContract):
    sharing = ProcessSharing()


class TestGenericAcp(AcpContract):
    quirks = fake_acp.AcpQuirks()

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        config = AcpAgentConfig(name="fake", command="fake-agent --acp")
        plugin = acp_plugin(config)
        context = on(executor, plugin.create_provider(), "fake-agent")
        return AcpTransport(context, config.dialect(), client=config.client, **options)
