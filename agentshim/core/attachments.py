"""What a prompt may carry besides its text: an image, a link to a resource, a resource's text.

Only transports whose agents take them send them (ACP agents, each as its ``initialize``
answer allows); every other transport refuses a turn that carries any, rather than drop them.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshim.core._error_base import InvalidRequestError

__all__ = ["Attachment", "PromptImage", "PromptLink", "PromptResource"]


def _text(owner: str, name: str, value: object, *, empty: bool = False) -> None:
    if not isinstance(value, str) or (not empty and not value):
        raise InvalidRequestError(
            f"{owner}.{name}", f"{value!r:.80} is not a non-empty str", f"pass {name} as a str"
        )


@dataclass(frozen=True, slots=True)
class PromptImage:
    """An image for the agent to look at: its bytes and MIME type (``image/png``, ...).

    Raises:
        InvalidRequestError: ``data`` is not bytes, or ``mime_type`` not an image type.
    """

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError("PromptImage.data", "is not bytes", "pass the image's bytes")
        _text("PromptImage", "mime_type", self.mime_type)
        if not self.mime_type.startswith("image/"):
            raise InvalidRequestError(
                "PromptImage.mime_type",
                f"{self.mime_type!r:.80} is not an image type",
                "pass an image MIME type such as image/png",
            )


@dataclass(frozen=True, slots=True)
class PromptLink:
    """A resource the agent may open itself: its URI (``file:///...``) and a name for it.

    Raises:
        InvalidRequestError: ``uri`` or ``name`` is not a non-empty str.
    """

    uri: str
    name: str
    mime_type: str | None = None

    def __post_init__(self) -> None:
        _text("PromptLink", "uri", self.uri)
        _text("PromptLink", "name", self.name)


@dataclass(frozen=True, slots=True)
class PromptResource:
    """A resource's text, given to the agent inline: its URI and its contents.

    Raises:
        InvalidRequestError: ``uri`` is not a non-empty str, or ``text`` not a str (it may be
            empty).
    """

    uri: str
    text: str
    mime_type: str | None = None

    def __post_init__(self) -> None:
        _text("PromptResource", "uri", self.uri)
        _text("PromptResource", "text", self.text, empty=True)


Attachment = PromptImage | PromptLink | PromptResource
"""Anything a TurnRequest may attach to its prompt."""
