"""A fake interactive Claude Code: a small program speaking the TUI's terminal protocol.

``install_fake_claude_tui(directory, FakeTuiScript([...]))`` writes an executable ``claude``
into ``directory`` and returns its path; point a InstalledCli's ``binary_path`` at it and
run it on the host executor (it needs a real terminal). What it does copies Claude Code
2.1.197 and 2.1.332 (``../shared/transport-captures/claude/b*``): it reads ``--settings`` and
runs the command hooks registered there (SessionStart, UserPromptSubmit, Stop, StopFailure,
SessionEnd, PermissionRequest, whose printed decision it obeys), shows the workspace-trust
dialog (either option order), takes bracketed pastes and Enter (dropping an Enter that comes
too soon after a paste, ``enter_race``, or the first ``drop_enters`` ones), interrupts a
turn on Esc (the prompt comes back into the input box; no hook fires), exits on Ctrl-C twice,
and writes the session transcript (``ai-title``, ``user``, ``assistant`` with usage,
``system/turn_duration``), optionally late. ``auth_failure`` makes it print that text and
exit 1 before it is ready; ``weekly_used`` shows the weekly-limit banner after each turn.

Turns are taken from the script in order by every process started from the same install, so
a conversation's turns keep their order across a process that died and one that resumed it.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FakeTuiScript", "FakeTuiTurn", "install_fake_claude_tui", "main"]

_STATE = "fake-tui-state.json"


def _no_args() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class FakeTuiTurn:
    """One scripted turn: answer ``text``; or ``hang`` until Esc; or fail with ``error``.

    ``error`` is StopFailure's ``error`` (``authentication_failed``, ``rate_limit``, ...) and
    ``error_text`` its ``last_assistant_message``. With ``tool`` the model first calls it with
    ``tool_input``; ``ask`` makes the CLI ask permission first (the PermissionRequest hook's
    decision is obeyed; a deny's message becomes the tool result). A ``tool`` named
    ``mcp__<server>__<name>`` is called on that server of the ``--mcp-config`` files (started,
    initialized and asked ``tools/call`` once, its ``${VAR}`` references expanded from the
    environment). ``transcript_delay``
    writes the turn's transcript lines that many seconds after its Stop hook.
    """

    text: str = "done"
    hang: bool = False
    error: str | None = None
    error_text: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=_no_args)
    ask: bool = False
    input_tokens: int = 100
    output_tokens: int = 20
    transcript_delay: float = 0.0


def _no_turns() -> list[FakeTuiTurn]:
    return []


@dataclass(frozen=True, slots=True)
class FakeTuiScript:
    """What the fake CLI does, for every process started from one install.

    ``trust_prompt`` shows the workspace-trust dialog once per working directory, with
    "No, exit" listed (and selected) first when ``refuse_first`` (as 2.1.332 does).
    ``mcp_list_delay``: after SessionStart, as the real CLI does in the background, every
    ``--mcp-config`` server is started and asked ``tools/list`` this many seconds later; a
    tool of a server not listed yet is "No such tool available".
    """

    turns: list[FakeTuiTurn] = field(default_factory=_no_turns)
    trust_prompt: bool = False
    refuse_first: bool = False
    enter_race: float = 0.0
    drop_enters: int = 0
    auth_failure: str | None = None
    weekly_used: int | None = None
    title: str | None = None
    startup_delay: float = 0.0
    mcp_list_delay: float = 0.0


def install_fake_claude_tui(directory: Path, script: FakeTuiScript) -> Path:
    """Write the fake ``claude`` (and its script) into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    script_file = directory / "fake-tui-script.json"
    script_file.write_text(json.dumps(asdict(script)), encoding="utf-8")
    (directory / _STATE).write_text(json.dumps({"next": 0, "drops": 0, "trusted": []}))
    program = directory / "claude"
    root = str(Path(__file__).resolve().parent.parent.parent)
    program.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "from agentshim.testing.claude_tui import main\n"
        f"sys.exit(main({str(script_file)!r}))\n",
        encoding="utf-8",
    )
    program.chmod(0o755)
    return program


# -- the program -------------------------------------------------------------------------------


def _words(text: str) -> str:
    """``text`` drawn the way the TUI draws it: a column move between words."""
    out: list[str] = []
    for line in text.split("\n"):
        column, parts = 2, list[str]()
        for word in line.split(" "):
            parts.append(f"\x1b[{column}G{word}")
            column += len(word) + 1
        out.append("".join(parts))
    return "\r\n".join(out) + "\r\n"


class _Fake:
    def __init__(
        self, script_file: str, argv: list[str], answer: Callable[[str], str] | None = None
    ) -> None:
        self.answer = answer
        self.dir = Path(script_file).parent
        self.script: dict[str, Any] = json.loads(Path(script_file).read_text())
        self.argv = argv
        self.cwd = os.getcwd()
        self.session_id = self._flag("--session-id") or self._flag("--resume") or str(uuid.uuid4())
        settings_file = self._flag("--settings")
        self.settings: dict[str, Any] = (
            json.loads(Path(settings_file).read_text()) if settings_file else {}
        )
        config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(
            os.environ.get("HOME", "/tmp"), ".claude"
        )
        munged = re.sub(r"[^A-Za-z0-9]", "-", self.cwd)
        self.transcript = Path(config) / "projects" / munged / f"{self.session_id}.jsonl"
        self.lock = threading.Lock()
        self.input = ""
        self.pasting = False
        self.pasted_at = 0.0
        self.busy: threading.Thread | None = None
        self.cancel = threading.Event()
        self.last_ctrl_c = 0.0
        self.messages = 0
        self.listed: set[str] = set()

    def _flag(self, name: str) -> str | None:
        if name in self.argv:
            at = self.argv.index(name)
            if at + 1 < len(self.argv):
                return self.argv[at + 1]
        return None

    def out(self, text: str) -> None:
        with self.lock:
            os.write(1, text.encode("utf-8"))

    def state(self, key: str | None = None, value: object = None) -> dict[str, Any]:
        """The install's shared state; with ``key``, after setting it to ``value``."""
        path = self.dir / _STATE
        with self.lock:
            data: dict[str, Any] = json.loads(path.read_text())
            if key is not None:
                data[key] = value
                # Written aside and renamed: a fake killed mid-write (as the contract kills it)
                # must leave the old state, not an empty file, for the CLI that resumes.
                aside = path.with_name(f"{path.name}.{os.getpid()}")
                aside.write_text(json.dumps(data))
                os.replace(aside, path)
            return data

    def hook(self, event: str, **fields: Any) -> str:
        payload = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "cwd": self.cwd,
            **fields,
            "hook_event_name": event,
        }
        printed = ""
        for group in self.settings.get("hooks", {}).get(event, []):
            for entry in group.get("hooks", []):
                done = subprocess.run(
                    ["/bin/sh", "-c", entry["command"]],
                    input=json.dumps(payload).encode(),
                    capture_output=True,
                    timeout=entry.get("timeout", 60),
                    check=False,
                )
                printed += done.stdout.decode("utf-8", "replace")
        return printed

    def mcp_servers(self) -> dict[str, Any]:
        """The servers of the ``--mcp-config`` files, by name."""
        servers: dict[str, Any] = {}
        for at, flag in enumerate(self.argv):
            if flag == "--mcp-config" and at + 1 < len(self.argv):
                servers.update(json.loads(Path(self.argv[at + 1]).read_text())["mcpServers"])
        return servers

    def list_tools(self) -> None:
        """List every server's tools, later, as the real CLI connects them after SessionStart."""
        time.sleep(self.script.get("mcp_list_delay", 0.0))
        for name, server in self.mcp_servers().items():
            if "result" in _mcp_exchange(server, "tools/list", {}):
                with self.lock:
                    self.listed.add(name)

    def mcp_call(self, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        """Call MCP tool ``mcp__<server>__<name>`` on a server of the ``--mcp-config`` files."""
        _, server_name, name = tool.split("__", 2)
        server = self.mcp_servers().get(server_name)
        with self.lock:
            listed = server_name in self.listed
        if server is None or not listed:
            return f"No such tool available: {tool}", True
        answer = _mcp_exchange(server, "tools/call", {"name": name, "arguments": args})
        if "error" in answer:
            return str(answer["error"].get("message")), True
        result: dict[str, Any] = answer.get("result") or {}
        text = "".join(c.get("text", "") for c in result.get("content", []))
        return text, bool(result.get("isError"))

    def record(self, *lines: dict[str, Any]) -> None:
        self.transcript.parent.mkdir(parents=True, exist_ok=True)
        with self.lock, self.transcript.open("a", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps({**line, "sessionId": self.session_id}) + "\n")

    # -- start-up ---------------------------------------------------------------------------

    def start(self) -> int | None:
        self.out("\x1b[?2004h\x1b[?1004h")
        time.sleep(self.script.get("startup_delay", 0.0))
        failure = self.script.get("auth_failure")
        if failure:
            self.out(_words(failure))
            return 1
        resume = self._flag("--resume")
        if resume is not None and "--fork-session" in self.argv:
            self.session_id = self._flag("--session-id") or str(uuid.uuid4())
            self.transcript = self.transcript.parent / f"{self.session_id}.jsonl"
        trusted: list[str] = self.state()["trusted"]
        if self.script.get("trust_prompt") and self.cwd not in trusted:
            if not self.dialog(
                "Quick safety check: Is this a project you trust?", "Yes, I trust this folder"
            ):
                self.out(_words("Claude Code didn't start because this folder isn't trusted."))
                return 1
            self.state("trusted", [*trusted, self.cwd])
        bypass = "--dangerously-skip-permissions" in self.argv
        warned = bypass and not self.settings.get("skipDangerousModePermissionPrompt")
        if warned and not self.dialog(
            "WARNING: Claude Code running in Bypass Permissions mode", "Yes, I accept"
        ):
            return 1
        self.hook("SessionStart", source="resume" if resume else "startup", model="fake-model")
        threading.Thread(target=self.list_tools, daemon=True).start()
        self.out(_words("\u276f "))
        return None

    def dialog(self, title: str, accept: str) -> bool:
        options = ["No, exit", accept] if self.script.get("refuse_first") else [accept, "No, exit"]
        selected = 0
        while True:
            marks = ["\u276f" if index == selected else " " for index in range(2)]
            self.out(
                _words(
                    f"{title}\n\n{marks[0]} {options[0]}\n{marks[1]} {options[1]}\n\n"
                    "Enter to confirm"
                )
            )
            data = os.read(0, 1024)
            if not data:
                return False
            if data.startswith((b"\x1b[B", b"\x1b[A")):
                selected = 1 - selected
            elif b"\r" in data:
                return options[selected] == accept

    # -- turns ------------------------------------------------------------------------------

    def keys(self, data: bytes) -> int | None:
        text = data.decode("utf-8", "replace")
        while text:
            if text.startswith("\x1b[200~"):
                self.pasting, text = True, text[6:]
                continue
            if text.startswith("\x1b[201~"):
                self.pasting, text = False, text[6:]
                self.pasted_at = time.monotonic()
                continue
            if self.pasting:
                end = text.find("\x1b[201~")
                chunk = text if end < 0 else text[:end]
                self.input += chunk
                text = text[len(chunk) :]
                continue
            char, text = text[0], text[1:]
            if char == "\r":
                self.enter()
            elif char == "\x1b" and not text.startswith("["):
                if self.busy is not None:
                    self.cancel.set()
            elif char == "\x15":
                self.input = ""
            elif char == "\x03":
                now = time.monotonic()
                if self.input:
                    self.input = ""
                elif now - self.last_ctrl_c < 2.0:
                    self.hook("SessionEnd", reason="prompt_input_exit")
                    self.out(
                        "\x1b[?2004l\r\nResume this session with:\r\nclaude --resume "
                        + self.session_id
                        + "\r\n"
                    )
                    return 0
                else:
                    self.last_ctrl_c = now
                    self.out(_words("Press Ctrl-C again to exit"))
            elif char >= " " or char in "\n\t":
                self.input += char
        return None

    def enter(self) -> None:
        if not self.input.strip() or self.busy is not None:
            return
        race = self.script.get("enter_race", 0.0)
        if race and time.monotonic() - self.pasted_at < race:
            return
        drops: int = self.state()["drops"]
        if drops < self.script.get("drop_enters", 0):
            self.state("drops", drops + 1)
            return
        prompt, self.input = self.input, ""
        prompt_id = str(uuid.uuid4())
        # The script's turn is taken before the hook says the prompt arrived: a test that kills
        # the CLI on that word must find the turn spent, or the respawned CLI plays it again.
        turns: list[dict[str, Any]] = self.script.get("turns", [])
        index: int = self.state()["next"]
        self.state("next", index + 1)
        turn: dict[str, Any] = turns[index] if index < len(turns) else {"text": "(no turn left)"}
        self.hook("UserPromptSubmit", prompt_id=prompt_id, permission_mode="default", prompt=prompt)
        self.cancel.clear()
        self.busy = threading.Thread(target=self.run, args=(prompt, prompt_id, turn), daemon=True)
        self.busy.start()

    def message(
        self, prompt_id: str, content: list[dict[str, Any]], turn: dict[str, Any]
    ) -> dict[str, Any]:
        self.messages += 1
        usage = {
            "input_tokens": turn.get("input_tokens", 100),
            "output_tokens": turn.get("output_tokens", 20),
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }
        body = {"id": f"msg_fake_{self.messages}", "role": "assistant", "model": "fake-model"}
        return {
            "type": "assistant",
            "promptId": prompt_id,
            "message": {**body, "content": content, "usage": usage},
        }

    def run(self, prompt: str, prompt_id: str, turn: dict[str, Any]) -> None:
        try:
            self.play(prompt, prompt_id, turn)
        finally:
            self.busy = None
            self.out(_words("\u276f "))

    def play(self, prompt: str, prompt_id: str, turn: dict[str, Any]) -> None:
        lines: list[dict[str, Any]] = []
        if self.script.get("title") and not self.transcript.exists():
            title = {"type": "ai-title", "aiTitle": self.script["title"]}
            self.record(title, title)
        self.record(
            {"type": "user", "promptId": prompt_id, "message": {"role": "user", "content": prompt}}
        )
        self.out(_words(f"\u276f {prompt}"))
        if turn.get("hang"):
            self.cancel.wait()
            self.input = prompt  # an interrupted prompt comes back into the box
            self.record(
                {
                    "type": "user",
                    "promptId": prompt_id,
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": "[Request interrupted by user]"}],
                    },
                }
            )
            return
        if turn.get("error"):
            said = turn.get("error_text") or "API Error"
            self.out(_words(f"  \u23bf  {said}"))
            self.hook(
                "StopFailure", prompt_id=prompt_id, error=turn["error"], last_assistant_message=said
            )
            return
        tool = turn.get("tool")
        if tool:
            tool_id = f"toolu_fake_{self.messages}"
            args = dict(turn.get("tool_input") or {})
            lines.append(
                self.message(
                    prompt_id,
                    [{"type": "tool_use", "id": tool_id, "name": tool, "input": args}],
                    turn,
                )
            )
            result, failed = json.dumps(args), False
            if turn.get("ask"):
                printed = self.hook(
                    "PermissionRequest", prompt_id=prompt_id, tool_name=tool, tool_input=args
                )
                decision = _decision(printed)
                if decision.get("behavior") == "allow":
                    args = dict(decision.get("updatedInput") or args)
                    result = json.dumps(args)
                else:
                    result, failed = str(decision.get("message") or "denied"), True
            if tool.startswith("mcp__") and not failed:
                result, failed = self.mcp_call(tool, args)
            lines.append(
                {
                    "type": "user",
                    "promptId": prompt_id,
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tool_id,
                                "content": result,
                                "is_error": failed,
                            }
                        ],
                    },
                }
            )
        text = turn.get("text", "done") if self.answer is None else self.answer(prompt)
        lines.append(self.message(prompt_id, [{"type": "text", "text": text}], turn))
        lines.append({"type": "system", "subtype": "turn_duration", "durationMs": 5})
        self.out(_words(f"\u25cf {text}"))
        delay = turn.get("transcript_delay", 0.0)
        if not delay:
            self.record(*lines)
        self.hook("Stop", prompt_id=prompt_id, last_assistant_message=text, stop_hook_active=False)
        if delay:
            threading.Timer(delay, self.record, args=lines).start()
        used = self.script.get("weekly_used")
        if used is not None:
            self.out(_words(f"You've used {used}% of your weekly limit"))


def _expand(value: str) -> str:
    """``${VAR}`` references expanded from this process's environment, as Claude Code does."""
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ.get(m[1], ""), value)


def _mcp_exchange(server: dict[str, Any], method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Start a stdio MCP server, initialize it, ask ``method`` once; the answer."""
    declared: dict[str, Any] = server.get("env") or {}
    env = {**os.environ, **{str(k): _expand(str(v)) for k, v in declared.items()}}
    argv = [_expand(str(server["command"])), *(_expand(str(a)) for a in server.get("args", []))]
    initialize: dict[str, Any] = {"capabilities": {}}
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": method, "params": params},
    ]
    answer: dict[str, Any] = {"error": {"message": "the MCP server answered nothing"}}
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        for message in messages:
            child.stdin.write(json.dumps(message) + "\n")
            child.stdin.flush()
            while "id" in message:
                line = child.stdout.readline()
                if not line:
                    return {"error": {"message": "the MCP server ended"}}
                answer = json.loads(line)
                if answer.get("id") == message["id"]:
                    break
        child.stdin.close()
        child.wait(30)
    return answer


def _decision(printed: str) -> dict[str, Any]:
    try:
        value = json.loads(printed)
    except ValueError:
        return {}
    return dict(value.get("hookSpecificOutput", {}).get("decision") or {})


def main(script_file: str, answer: Callable[[str], str] | None = None) -> int:
    """Run the fake CLI on the terminal on stdin (its argv is ``sys.argv[1:]``).

    ``answer`` makes the reply to each prompt (default: the scripted turn's ``text``).
    """
    import termios
    import tty

    fake = _Fake(script_file, sys.argv[1:], answer)
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    try:
        code = fake.start()
        if code is not None:
            return code
        while True:
            ready, _, _ = select.select([0], [], [], 0.5)
            if not ready:
                continue
            data = os.read(0, 65536)
            if not data:
                return 0
            code = fake.keys(data)
            if code is not None:
                return code
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
