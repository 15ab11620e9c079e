"""The generated app-server protocol: current with its schema, and what it decodes and refuses."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.doctor.clis import pinned_cli
from agentshim.providers.codex.app_server import protocol as p
from agentshim.transport.ndjson import encode_frame

ROOT = Path(__file__).parents[4]
TRANSCRIPTS = ROOT / "tests" / "fixtures" / "codex" / "stream"
GENERATOR = ROOT / "scripts" / "generate_codex_protocol.py"
SCHEMA = ROOT / "scripts" / "codex_protocol" / "schema.json"
PROTOCOL = ROOT / "agentshim" / "providers" / "codex" / "app_server" / "protocol.py"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate_codex_protocol", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _lines(direction: str) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(TRANSCRIPTS.glob("*.transcript.jsonl")):
        text = "".join(
            record["data"]
            for record in map(json.loads, path.read_text().splitlines())
            if record["dir"] == direction
        )
        found += [(path.name, json.loads(line)) for line in text.splitlines() if line.strip()]
    return found


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


# -- the generator -------------------------------------------------------------------------


def test_protocol_py_is_what_the_generator_makes_from_the_checked_in_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert _generator().emit(schema) == PROTOCOL.read_text(), (
        "protocol.py differs from the generator's output: run scripts/generate_codex_protocol.py"
    )


def test_the_schema_is_the_pinned_cli_versions() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["codex_cli_version"] == pinned_cli("codex").pinned == p.CLI_VERSION


def test_the_allowlist_roots_are_all_in_the_pruned_schema() -> None:
    allowlist = json.loads((SCHEMA.parent / "allowlist.json").read_text())
    methods = json.loads(SCHEMA.read_text())["methods"]
    assert set(methods["client_requests"]) == set(allowlist["client_requests"])
    assert set(methods["server_notifications"]) == set(allowlist["server_notifications"])
    assert set(methods["server_requests"]) == set(allowlist["server_requests"])


# -- the transcripts -----------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted({name for name, _ in _lines("out")}))
def test_every_server_message_in_the_transcripts_decodes_and_re_encodes(case: str) -> None:
    listed = set(p.SERVER_NOTIFICATIONS) | set(p.SERVER_REQUESTS)
    for _, frame in [entry for entry in _lines("out") if entry[0] == case]:
        message = p.parse_server_message(frame)
        params = getattr(message, "params", None)
        method = getattr(message, "method", None)
        if method in listed:
            assert not isinstance(params, p.UnknownParams), method
            assert _without_nulls(params.to_wire()) == _without_nulls(frame["params"]), method
        elif method is not None:
            assert isinstance(params, p.UnknownParams)
            assert params.to_wire() == frame.get("params")


def test_every_client_message_in_the_transcripts_decodes_strictly() -> None:
    seen: set[str] = set()
    for _, frame in _lines("in"):
        message = p.parse_client_message(frame)
        if isinstance(message, p.ClientRequest):
            assert not isinstance(message.params, p.UnknownParams), message.method
            assert message.params.to_wire() == frame["params"]
            seen.add(message.method)
    assert {"initialize", "thread/start", "thread/resume", "turn/start", "turn/interrupt"} <= seen
    assert "turn/steer" in seen


def test_every_response_decodes_with_its_requests_parse_result() -> None:
    requests: dict[tuple[str, int], str] = {}
    for case, frame in _lines("in"):
        if "method" in frame and "id" in frame:
            requests[(case, frame["id"])] = frame["method"]
    decoded = 0
    for case, frame in _lines("out"):
        if "result" in frame and "method" not in frame:
            method = requests.get((case, frame["id"]))
            if method in p.CLIENT_RESULTS:
                p.CLIENT_RESULTS[method](frame["result"], "Response.result")
                decoded += 1
    assert decoded >= 40


# -- strict and tolerant ---------------------------------------------------------------------


def test_a_strict_client_type_refuses_an_unlisted_enum_value_naming_its_path() -> None:
    with pytest.raises(p.CodexProtocolError) as refused:
        p.ThreadStartParams.from_wire({"sandbox": "everything"})
    assert refused.value.path == "ThreadStartParams.sandbox"
    assert "everything" in str(refused.value)


def test_a_strict_client_type_refuses_an_unlisted_member_and_a_bad_union() -> None:
    with pytest.raises(p.CodexProtocolError) as unlisted:
        p.ThreadStartParams.from_wire({"cwdd": "/x"})
    assert unlisted.value.path == "ThreadStartParams.cwdd"
    with pytest.raises(p.CodexProtocolError) as refused:
        p.FileChangeRequestApprovalResponse.from_wire({"decision": "maybe"})
    assert refused.value.path == "FileChangeRequestApprovalResponse.decision"


def test_a_tolerant_server_type_keeps_unknown_keys_and_values_and_re_encodes_them() -> None:
    frame = {
        "threadId": "t",
        "turn": {
            "id": "u",
            "items": [],
            "status": "paused",
            "futureMember": {"a": [1, 2]},
        },
        "alsoNew": True,
    }
    decoded = p.TurnCompletedNotification.from_wire(frame)
    assert decoded.turn.status == "paused"
    assert decoded.turn.extra_keys == {"futureMember": {"a": [1, 2]}}
    assert decoded.to_wire() == frame


def test_an_unknown_union_variant_is_kept_raw_and_re_encoded_unchanged() -> None:
    item = {"type": "hologram", "id": "h1", "shape": {"sides": 12}}
    decoded = p.thread_item_from_wire(item)
    assert isinstance(decoded, p.UnknownThreadItem)
    assert decoded.tag == "hologram"
    assert decoded.to_wire() == item


def test_a_missing_required_member_names_its_path_from_the_envelope() -> None:
    frame = {"method": "turn/completed", "params": {"threadId": "t", "turn": {"items": []}}}
    with pytest.raises(p.CodexProtocolError) as bad:
        p.parse_server_message(frame)
    assert bad.value.path == "Notification.params.turn.id"


def test_an_unlisted_method_keeps_its_params_and_a_server_request_its_id() -> None:
    message = p.parse_server_message({"method": "future/thing", "id": 7, "params": {"x": 1}})
    assert isinstance(message, p.ServerRequest)
    assert message.id == 7
    assert message.params == p.UnknownParams({"x": 1})


def test_requests_replies_and_params_carry_no_jsonrpc_member() -> None:
    frame = p.request(1, p.TurnInterruptParams(thread_id="t", turn_id="u"))
    assert frame == {
        "method": "turn/interrupt",
        "id": 1,
        "params": {"threadId": "t", "turnId": "u"},
    }
    reply = p.reply(
        0, p.FileChangeRequestApprovalResponse(decision=p.FileChangeApprovalDecision.DECLINE)
    )
    assert reply == {"id": 0, "result": {"decision": "decline"}}


def test_none_is_omitted_unless_the_member_is_required() -> None:
    wire = p.TextUserInput(text="hi").to_wire()
    assert wire == {"type": "text", "text": "hi"}


# -- properties ------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_COUNT = st.integers(min_value=0, max_value=2**40)


@given(_JSON)
def test_any_json_either_decodes_or_raises_codex_protocol_error(value: Any) -> None:
    try:
        p.parse_server_message(value)
    except p.CodexProtocolError as error:
        path = error.path
    else:
        path = "decoded"
    assert path


@given(st.sampled_from(sorted(p.SERVER_NOTIFICATIONS)), _JSON)
def test_any_params_of_a_listed_notification_decode_or_raise_with_a_path(
    method: str, params: Any
) -> None:
    try:
        p.parse_server_message({"method": method, "params": params})
    except p.CodexProtocolError as error:
        path = error.path
    else:
        path = "Notification.params"
    assert path.startswith("Notification.params")


@given(_COUNT, _COUNT, _COUNT, _COUNT, _COUNT)
def test_a_usage_breakdown_round_trips(
    inp: int, cached: int, out: int, reason: int, total: int
) -> None:
    wire = {
        "totalTokens": total,
        "inputTokens": inp,
        "cachedInputTokens": cached,
        "outputTokens": out,
        "reasoningOutputTokens": reason,
    }
    decoded = p.TokenUsageBreakdown.from_wire(wire)
    assert decoded.input_tokens == inp
    assert decoded.to_wire() == wire


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=10).filter(
            lambda k: k not in {"message", "additionalDetails", "codexErrorInfo", "misalignment"}
        ),
        _JSON,
        max_size=4,
    )
)
def test_unknown_members_of_a_tolerant_type_survive_a_round_trip(extra: dict[str, Any]) -> None:
    wire = {"message": "boom", **extra}
    assert p.TurnError.from_wire(wire).to_wire() == wire


@given(st.integers(min_value=0, max_value=2**31), st.sampled_from(["accept", "decline", "cancel"]))
def test_a_reply_is_one_json_line_the_client_parser_reads_back(
    request_id: int, decision: str
) -> None:
    line = encode_frame(p.reply(request_id, {"decision": decision}))
    assert line.count("\n") == 1
    message = p.parse_client_message(json.loads(line))
    assert isinstance(message, p.Response)
    assert message.id == request_id
    assert message.result == {"decision": decision}


# -- import cost -----------------------------------------------------------------------------


def test_import_agentshim_and_a_one_shot_codex_turn_never_load_the_protocol() -> None:
    script = textwrap.dedent(
        """
        import sys
        import agentshim
        from agentshim import CliAgent
        from agentshim.agent import Agent
        from agentshim.core.conversation import TransportKind
        from agentshim.core.permissions import ApprovalPolicy, NativePermissions
        from agentshim.testing import FakeExecutor, scripted_turn

        PROTOCOL = "agentshim.providers.codex.app_server.protocol"
        fake = FakeExecutor(scripted_turn("codex", text="hi"), binaries={"codex": "/usr/bin/codex"})
        result = CliAgent("codex", executor=fake, env={"PATH": "/usr/bin"}).run("do it")
        assert result.text == "hi", result
        Agent(
            "codex",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            transport=TransportKind.LONG_LIVED,
            executor=fake,
            env={"PATH": "/usr/bin"},
        )
        print(PROTOCOL in sys.modules)
        from agentshim.providers.codex.app_server import conversation
        print(PROTOCOL in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == ["False", "True"], out.stderr
