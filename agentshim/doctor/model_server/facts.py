"""What a request says about the conversation, read the same way for every API.

Rules match on these facts, never on raw bodies, so one rule works whichever CLI sent the
request. Reading never fails: a field of an unexpected shape counts as absent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ._json import as_int, as_list, as_object, as_str, text_of
from .kinds import Api, RequestKind

__all__ = ["OfferedTool", "RequestFacts", "read_facts", "with_kind"]


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """A tool the request offers the model: its name and its JSON Schema for arguments."""

    name: str
    schema: Mapping[str, object] = field(default_factory=dict[str, object])
    #: The tool's type when it is not a plain function tool (Codex ``custom``, ``local_shell``).
    kind: str = "function"


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """The conversation state a request carries, normalized across APIs.

    ``assistant_turns`` counts the model's earlier answers (a run of consecutive assistant
    items is one answer). ``user_text`` is the text of the latest user turn: the user messages
    since the answer before it, tool results excluded, so it stays the prompt while the model
    works through tool calls. ``schema`` is the JSON Schema the request asks the answer to
    follow (a response format, or Claude Code's ``StructuredOutput`` tool), if any.
    """

    api: Api | None = None
    kind: RequestKind = RequestKind.OTHER
    model: str = ""
    stream: bool = False
    assistant_turns: int = 0
    last_input_is_tool_result: bool = False
    user_text: str = ""
    system_text: str = ""
    tools: tuple[OfferedTool, ...] = ()
    schema: Mapping[str, object] | None = None
    schema_requested: bool = False
    max_tokens: int | None = None
    include_usage: bool = False

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Names of the offered tools, in request order."""
        return tuple(tool.name for tool in self.tools)

    def tool(self, name: str) -> OfferedTool | None:
        """The offered tool called ``name``, if any."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None


@dataclass(frozen=True, slots=True)
class _Entry:
    """One conversation item reduced to what matching needs."""

    role: str  # "user", "assistant" or "other"
    text: str = ""
    tool_result: bool = False


def _facts(
    api: Api,
    body: Mapping[str, object],
    entries: Sequence[_Entry],
    system: Sequence[str],
    *,
    tools: tuple[OfferedTool, ...],
    schema: Mapping[str, object] | None,
    schema_requested: bool,
    max_tokens: int | None,
    include_usage: bool = False,
    model: str | None = None,
    stream: bool | None = None,
) -> RequestFacts:
    """The facts of a request to ``api`` whose conversation reads as ``entries``.

    ``system`` holds the system texts (empty ones are left out); ``model`` and ``stream`` are
    the body's own fields unless given (Gemini puts them in the URL).
    """
    turns = 0
    previous = ""
    for entry in entries:
        if entry.role == "other":
            continue
        if entry.role == "assistant" and previous != "assistant":
            turns += 1
        previous = entry.role
    meaningful = [e for e in entries if e.role != "other"]
    return RequestFacts(
        api=api,
        model=as_str(body.get("model")) if model is None else model,
        stream=body.get("stream") is True if stream is None else stream,
        assistant_turns=turns,
        last_input_is_tool_result=bool(meaningful) and meaningful[-1].tool_result,
        user_text=_latest_user_text(meaningful),
        system_text="\n".join(s for s in system if s),
        tools=tools,
        schema=schema,
        schema_requested=schema_requested,
        max_tokens=max_tokens,
        include_usage=include_usage,
    )


_NOT_A_PROMPT = ("<system-reminder>", "[Request interrupted by user")
"""How the texts a CLI attaches to tool results begin: reminders, and the note an interrupt
leaves; neither is something the user said."""


def _prompt_beside_results(content: object) -> str:
    """The user's own text in a message of tool results (none: only attachments, or none)."""
    pieces: list[str] = []
    for part in as_list(content):
        obj = as_object(part)
        text = obj.get("text")
        if obj.get("type") != "text" or not isinstance(text, str) or not text.strip():
            continue
        if not text.lstrip().startswith(_NOT_A_PROMPT):
            pieces.append(text)
    return "\n".join(pieces)


def _latest_user_text(entries: Sequence[_Entry]) -> str:
    texts: list[str] = []
    for entry in reversed(entries):
        # Text riding along with a tool result (reminders some CLIs attach) is not a prompt.
        if entry.role == "user" and entry.text and not entry.tool_result:
            texts.append(entry.text)
        elif entry.role == "assistant" and texts:
            break
    return "\n".join(reversed(texts))


def read_facts(
    api: Api | None,
    body: object,
    *,
    model: str = "",
    stream: bool = False,
) -> RequestFacts:
    """Read the facts of a generation request body (kind is left for the classifier)."""
    obj = as_object(body)
    if api is Api.ANTHROPIC_MESSAGES:
        return _anthropic(obj)
    if api is Api.OPENAI_RESPONSES:
        return _responses(obj)
    if api is Api.OPENAI_CHAT:
        return _chat(obj)
    if api is Api.GEMINI:
        return _gemini(obj, model=model, stream=stream)
    return RequestFacts(api=api, model=model or as_str(obj.get("model")), stream=stream)


def _messages(body: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    """The role and content of each of the body's ``messages`` (Anthropic and Chat APIs)."""
    for raw in as_list(body.get("messages")):
        message = as_object(raw)
        yield as_str(message.get("role")), message.get("content")


def _anthropic(body: Mapping[str, object]) -> RequestFacts:
    entries: list[_Entry] = []
    for role, content in _messages(body):
        if role == "user":
            has_result = any(
                as_object(part).get("type") == "tool_result" for part in as_list(content)
            )
            prompt = _prompt_beside_results(content) if has_result else ""
            if prompt:
                # Claude Code sends the prompt after an interrupted tool call in the message
                # that carries the rejected call's result: the last input is that prompt.
                entries.append(_Entry("user", prompt))
            else:
                entries.append(_Entry("user", text_of(content), tool_result=has_result))
        elif role == "assistant":
            entries.append(_Entry("assistant"))
        else:
            entries.append(_Entry("other"))
    tools = tuple(
        OfferedTool(
            name=as_str(t.get("name")),
            schema=as_object(t.get("input_schema")),
            kind=as_str(t.get("type")) or "function",
        )
        for t in map(as_object, as_list(body.get("tools")))
        if as_str(t.get("name"))
    )
    # output_config.format is the current field; output_format the older beta spelling.
    fmt = as_object(as_object(body.get("output_config")).get("format")) or as_object(
        body.get("output_format")
    )
    schema = as_object(fmt.get("schema")) if fmt.get("type") == "json_schema" else None
    structured = next((t for t in tools if t.name == "StructuredOutput"), None)
    if schema is None and structured is not None:
        schema = structured.schema
    return _facts(
        Api.ANTHROPIC_MESSAGES,
        body,
        entries,
        [text_of(body.get("system"))],
        tools=tools,
        schema=schema,
        schema_requested=schema is not None,
        max_tokens=as_int(body.get("max_tokens")),
    )


_RESPONSES_MODEL_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "reasoning",
        "tool_search_call",
    }
)


def _responses(body: Mapping[str, object]) -> RequestFacts:
    raw_input = body.get("input")
    entries: list[_Entry] = []
    system: list[str] = [as_str(body.get("instructions"))]
    if isinstance(raw_input, str):
        entries.append(_Entry("user", raw_input))
    for raw in as_list(raw_input):
        item = as_object(raw)
        kind = as_str(item.get("type")) or "message"
        role = as_str(item.get("role"))
        if kind == "message" and role == "user":
            entries.append(
                _Entry("user", text_of(item.get("content"), text_types=("input_text", "text")))
            )
        elif kind == "message" and role in ("system", "developer"):
            system.append(text_of(item.get("content"), text_types=("input_text", "text")))
            entries.append(_Entry("other"))
        elif (kind == "message" and role == "assistant") or kind in _RESPONSES_MODEL_ITEMS:
            entries.append(_Entry("assistant"))
        elif kind.endswith("_output"):
            entries.append(_Entry("user", tool_result=True))
        else:
            entries.append(_Entry("other"))
    tools: list[OfferedTool] = []
    for t in map(as_object, as_list(body.get("tools"))):
        kind = as_str(t.get("type")) or "function"
        name = as_str(t.get("name")) or kind
        tools.append(OfferedTool(name=name, schema=as_object(t.get("parameters")), kind=kind))
    fmt = as_object(as_object(body.get("text")).get("format"))
    schema = as_object(fmt.get("schema")) if fmt.get("type") == "json_schema" else None
    return _facts(
        Api.OPENAI_RESPONSES,
        body,
        entries,
        system,
        tools=tuple(tools),
        schema=schema,
        schema_requested=schema is not None,
        max_tokens=as_int(body.get("max_output_tokens")),
    )


def _chat(body: Mapping[str, object]) -> RequestFacts:
    entries: list[_Entry] = []
    system: list[str] = []
    for role, content in _messages(body):
        if role == "user":
            entries.append(_Entry("user", text_of(content)))
        elif role == "assistant":
            entries.append(_Entry("assistant"))
        elif role in ("tool", "function"):
            entries.append(_Entry("user", tool_result=True))
        else:
            if role in ("system", "developer"):
                system.append(text_of(content))
            entries.append(_Entry("other"))
    tools = tuple(
        OfferedTool(
            name=as_str(fn.get("name")),
            schema=as_object(fn.get("parameters")),
        )
        for fn in (as_object(as_object(t).get("function")) for t in as_list(body.get("tools")))
        if as_str(fn.get("name"))
    )
    fmt = as_object(body.get("response_format"))
    schema: Mapping[str, object] | None = None
    if fmt.get("type") == "json_schema":
        schema = as_object(as_object(fmt.get("json_schema")).get("schema"))
    max_tokens = as_int(body.get("max_completion_tokens"))
    return _facts(
        Api.OPENAI_CHAT,
        body,
        entries,
        system,
        tools=tools,
        schema=schema,
        schema_requested=schema is not None or fmt.get("type") == "json_object",
        max_tokens=max_tokens if max_tokens is not None else as_int(body.get("max_tokens")),
        include_usage=as_object(body.get("stream_options")).get("include_usage") is True,
    )


def _gemini(body: Mapping[str, object], *, model: str, stream: bool) -> RequestFacts:
    entries: list[_Entry] = []
    for raw in as_list(body.get("contents")):
        content = as_object(raw)
        parts = [as_object(p) for p in as_list(content.get("parts"))]
        if as_str(content.get("role")) == "model":
            entries.append(_Entry("assistant"))
            continue
        result = any("functionResponse" in p or "function_response" in p for p in parts)
        text = "\n".join(as_str(p.get("text")) for p in parts if isinstance(p.get("text"), str))
        entries.append(_Entry("user", text, tool_result=result))
    tools: list[OfferedTool] = []
    for group in map(as_object, as_list(body.get("tools"))):
        declarations = group.get("functionDeclarations", group.get("function_declarations"))
        for decl in map(as_object, as_list(declarations)):
            name = as_str(decl.get("name"))
            params = decl.get("parametersJsonSchema", decl.get("parameters"))
            if name:
                tools.append(OfferedTool(name=name, schema=as_object(params)))
    config = as_object(body.get("generationConfig", body.get("generation_config")))
    raw_schema = config.get("responseJsonSchema", config.get("responseSchema"))
    schema = as_object(raw_schema) if raw_schema is not None else None
    system = body.get("systemInstruction", body.get("system_instruction"))
    system_text = system if isinstance(system, str) else text_of(as_object(system).get("parts"))
    return _facts(
        Api.GEMINI,
        body,
        entries,
        [system_text],
        tools=tuple(tools),
        schema=schema,
        schema_requested=schema is not None
        or as_str(config.get("responseMimeType")) == "application/json",
        max_tokens=as_int(config.get("maxOutputTokens")),
        model=model,
        stream=stream,
    )


def with_kind(facts: RequestFacts, kind: RequestKind) -> RequestFacts:
    """Return ``facts`` with its kind set."""
    return dataclasses.replace(facts, kind=kind)
