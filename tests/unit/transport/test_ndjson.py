"""The one encoder of what goes to a CLI's stdin: one valid JSON line, or nothing."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError
from agentshim.transport.ndjson import encode_frame
from tests.unit.core.json_strategies import finite_json

JSON = finite_json(texts=st.text(), keys=st.text(), list_size=4, dict_size=4, max_leaves=20)


class TestEncodeFrame:
    @given(st.dictionaries(st.text(), JSON, max_size=6))
    def test_any_json_value_becomes_exactly_one_line_that_decodes_back(
        self, frame: dict[str, Any]
    ) -> None:
        line = encode_frame(frame)
        assert line.endswith("\n")
        assert line.count("\n") == 1
        assert "\r" not in line
        assert line.isascii()
        assert json.loads(line) == frame
        line.encode("utf-8")  # never a lone surrogate on the pipe

    @given(st.text())
    def test_every_prompt_survives_inside_a_user_message(self, text: str) -> None:
        frame = {"type": "user", "message": {"role": "user", "content": text}}
        assert json.loads(encode_frame(frame))["message"]["content"] == text

    @pytest.mark.parametrize(
        "bad", [{"x": math.nan}, {"x": math.inf}, {"x": {1, 2}}, {"x": object()}, {1: "key"}]
    )
    def test_what_json_cannot_hold_is_refused_before_anything_is_written(self, bad: Any) -> None:
        if 1 in bad:
            # json turns an int key into a string; that is still one valid line.
            assert json.loads(encode_frame(bad)) == {"1": "key"}
            return
        with pytest.raises(InvalidRequestError, match="cannot be written as JSON"):
            encode_frame(bad)
