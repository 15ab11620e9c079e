"""The bridge says what of the socket's answers reached the CLI; a tool list counts from then."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim import tool
from agentshim.tools import LocalToolServer, serve_tools
from agentshim.tools.bridge import RELAYED, Relay
from tests.unit.tools.serving import serve_while

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix sockets")

NOTE_START = b'{"jsonrpc":"2.0","method":"' + RELAYED.encode() + b'"'
LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode() + b"\n"
PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode() + b"\n"


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key


def _note(count: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": RELAYED, "params": {"bytes": count}}).encode()


@given(
    lines=st.lists(st.text(alphabet="ab {}:,", max_size=20), min_size=1, max_size=8),
    data=st.data(),
)
def test_notes_fall_between_the_clis_lines_and_the_last_counts_every_byte(
    lines: list[str], data: st.DataObject
) -> None:
    stream = "".join(f"{line}\n" for line in lines).encode()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(stream)), max_size=6)) | {len(stream)})
    chunks = [stream[a:b] for a, b in zip([0, *cuts], cuts, strict=False)]
    writes = data.draw(st.lists(st.tuples(st.integers(0, len(chunks)), st.integers(1, 99))))
    relay = Relay()
    sent = b""
    for at in range(len(chunks) + 1):
        for where, count in writes:
            if where == at:
                sent += relay.wrote_to_cli(count)
        if at < len(chunks):
            sent += relay.from_cli(chunks[at])
    assert sent.endswith(b"\n")
    received = sent[:-1].split(b"\n")
    notes = [json.loads(line) for line in received if line.startswith(NOTE_START)]
    # Whole lines only: without the notes, the socket read exactly what the CLI wrote.
    assert [line for line in received if not line.startswith(NOTE_START)] == [
        line.encode() for line in lines
    ]
    counts = [note["params"]["bytes"] for note in notes]
    assert counts == sorted(counts)
    if writes:
        assert counts[-1] == sum(count for _, count in writes)
    else:
        assert notes == []


def _client(serving: LocalToolServer, steps: list[bool]) -> None:
    """Lists the tools by hand, as a client that is not the bridge, noting ``listing_delivered``
    after each step; a ping after each note makes sure the server has read the note."""
    (credential,) = serving.credential_env.values()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(serving.socket_path)
        stream = sock.makefile("rwb")
        stream.write(credential.encode() + b"\n" + LIST)
        stream.flush()
        listing = len(stream.readline())
        steps.append(serving.listing_delivered)
        for count in (listing - 1, listing):
            stream.write(_note(count) + b"\n" + PING)
            stream.flush()
            assert b'"result"' in stream.readline()
            steps.append(serving.listing_delivered)


def test_a_tool_list_counts_as_delivered_once_the_bridge_says_all_of_it_reached_the_cli() -> None:
    with serve_tools([lookup]) as serving:
        steps: list[bool] = []
        serve_while(serving, lambda: _client(serving, steps))
        assert serving.host.listed
    # Answered, then one byte short, then whole.
    assert steps == [False, False, True]


BRIDGE_CLIENT = """
import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for request in ({"id": 0, "method": "initialize", "params": {}}, {"id": 1, "method": "tools/list"}):
    child.stdin.write(json.dumps({"jsonrpc": "2.0", **request}).encode() + b"\\n")
    child.stdin.flush()
    print(child.stdout.readline().decode().strip(), flush=True)
child.stdin.close()
sys.exit(child.wait(30))
"""


def test_through_the_bridge_the_tool_list_is_delivered_once_the_cli_could_read_it() -> None:
    with serve_tools([lookup]) as serving:
        assert not serving.listing_delivered
        printed: list[str] = []

        def cli() -> None:
            done = subprocess.run(
                [sys.executable, "-c", BRIDGE_CLIENT, serving.server.command, *serving.server.args],
                env={**os.environ, **serving.credential_env},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            printed.extend(done.stdout.splitlines())

        serve_while(serving, cli)
        serving.ready()  # the bridge's last note, sent before it exited
        assert [json.loads(line)["id"] for line in printed] == [0, 1]
        assert "lookup" in printed[1]
        assert serving.listing_delivered
