"""The byte-to-line parser under the executor, checked against a plain reference."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentshim.execution._lines import LineAssembler, LineOverflow, OutputTail, split_lines


def reference(data: bytes) -> list[str]:
    """Lines as a reader would expect them: split at b"\\n", decoded with replacement."""
    parts = data.split(b"\n")
    lines = [part.decode("utf-8", "replace") + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1].decode("utf-8", "replace"))
    return lines


def assemble(chunks: list[bytes]) -> list[str]:
    assembler = LineAssembler()
    lines: list[str] = []
    for chunk in chunks:
        text = assembler.feed(chunk)
        if text:
            lines.extend(split_lines(text))
    rest = assembler.finish()
    if rest:
        lines.append(rest)
    return lines


byte_soup = st.lists(
    st.one_of(
        st.binary(max_size=20),
        st.sampled_from(
            [
                b"\n",
                b"\r\n",
                b"\xe2\x82\xac",
                b"\xe2\x82",
                b"\xff",
                "\u2028".encode(),
                b"\x1c",
                b"\x85",
            ]
        ),
        st.text(max_size=10).map(lambda text: text.encode("utf-8", "surrogatepass")),
    ),
    max_size=30,
)


def chunked(data: bytes, sizes: list[int]) -> list[bytes]:
    chunks: list[bytes] = []
    position = 0
    index = 0
    while position < len(data):
        size = sizes[index % len(sizes)]
        chunks.append(data[position : position + size])
        position += size
        index += 1
    return chunks


@given(byte_soup, st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=10))
def test_any_chunking_gives_the_lines_of_the_whole_stream(
    pieces: list[bytes], sizes: list[int]
) -> None:
    data = b"".join(pieces)
    assert assemble(chunked(data, sizes)) == reference(data)


@given(
    byte_soup,
    st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=10),
    st.integers(min_value=1, max_value=30),
)
def test_a_line_over_the_limit_stops_the_stream_after_the_lines_before_it(
    pieces: list[bytes], sizes: list[int], limit: int
) -> None:
    data = b"".join(pieces)
    expected = reference(data)
    # Sizes in bytes before the newline, from the raw data (decoding changes them).
    too_long = [len(raw) > limit for raw in data.split(b"\n")]
    first_bad = too_long.index(True) if True in too_long else None

    assembler = LineAssembler(limit)
    lines: list[str] = []
    overflowed = False
    for chunk in chunked(data, sizes):
        try:
            text = assembler.feed(chunk)
        except LineOverflow as overflow:
            text = overflow.text
            overflowed = True
        if text:
            lines.extend(split_lines(text))
        if overflowed:
            break
    if overflowed:
        assert first_bad is not None
        assert lines == expected[:first_bad]
        assert assembler.feed(b"more\n") == ""
        assert assembler.finish() == ""
    else:
        assert first_bad is None
        rest = assembler.finish()
        assert lines + ([rest] if rest else []) == expected


@given(st.lists(st.text(max_size=50), max_size=30), st.integers(min_value=0, max_value=120))
def test_the_tail_is_the_end_of_everything_added(pieces: list[str], limit: int) -> None:
    tail = OutputTail(limit)
    for piece in pieces:
        tail.add(piece)
    whole = "".join(pieces)
    assert tail.text() == (whole[len(whole) - limit :] if len(whole) > limit else whole)
