from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError
from agentshim.execution import CommandRequest, NullSink, PathMap, confine
from agentshim.testing.confinement import FakeConfinement, WrapCall
from agentshim.testing.executor import FakeExecutor, FakeRun


class TestPathMap:
    def test_the_longest_prefix_wins(self) -> None:
        paths = PathMap({"/home/me": "/host-home", "/home/me/project": "/workspace"})
        assert paths.to_agent("/home/me/project/a.py") == "/workspace/a.py"
        assert paths.to_agent("/home/me/notes.txt") == "/host-home/notes.txt"
        assert paths.to_agent("/home/me/project") == "/workspace"
        assert paths.to_host("/workspace/a.py") == "/home/me/project/a.py"

    def test_prefixes_match_whole_components(self) -> None:
        paths = PathMap({"/work": "/w"})
        with pytest.raises(ValueError, match="no mapped prefix"):
            paths.to_agent("/workshop/x")

    def test_relative_paths_are_refused_everywhere(self) -> None:
        with pytest.raises(InvalidRequestError, match="relative") as caught:
            PathMap({"work": "/w"})
        assert caught.value.field == "PathMap.mounts"
        with pytest.raises(ValueError, match="relative"):
            PathMap({"/work": "w"})
        with pytest.raises(InvalidRequestError, match="relative") as caught:
            PathMap({"/work": "/w"}).to_agent("work/x")
        assert caught.value.field == "host_path"
        with pytest.raises(InvalidRequestError, match="relative") as caught:
            PathMap({"/work": "/w"}).to_host("./x")
        assert caught.value.field == "agent_path"

    @pytest.mark.parametrize("mounts", ["/work", [("/work",)], [("/work", None)], None])
    def test_mounts_that_are_not_path_pairs_are_refused(self, mounts: object) -> None:
        with pytest.raises(InvalidRequestError, match=r"PathMap\.mounts"):
            PathMap(mounts)  # type: ignore[arg-type]

    def test_paths_are_normalized_before_matching(self) -> None:
        paths = PathMap([("/work/", "/w")])
        assert paths.to_agent("/work/a/../b//c") == "/w/b/c"
        with pytest.raises(ValueError, match="no mapped prefix"):
            paths.to_agent("/work/../etc/passwd")

    def test_a_root_mount_maps_everything(self) -> None:
        assert PathMap({"/": "/host"}).to_agent("/etc/hosts") == "/host/etc/hosts"
        assert PathMap({"/": "/host"}).to_host("/host/etc") == "/etc"

    @given(
        st.lists(st.text(alphabet="abc.", min_size=1, max_size=4), min_size=0, max_size=5).filter(
            lambda parts: all(part not in (".", "..") for part in parts)
        )
    )
    def test_mapping_there_and_back_returns_the_path(self, parts: list[str]) -> None:
        paths = PathMap({"/home/me": "/h", "/home/me/project": "/workspace", "/srv": "/data/srv"})
        for root in ("/home/me", "/home/me/project", "/srv"):
            host = "/".join([root, *parts])
            assert paths.to_host(paths.to_agent(host)) == host


class TestConfine:
    def test_cwd_moves_into_the_wrap_and_the_host_process_gets_none(self) -> None:
        confinement = FakeConfinement()
        inner = FakeExecutor(FakeRun())
        confine(inner, confinement, host_env={"PATH": "/usr/bin", "A": "host"}).run(
            CommandRequest(["cli"], stdin="p", cwd="/workspace", env={"A": "turn"}, timeout=5),
            NullSink(),
        )
        (sent,) = inner.requests
        assert sent.cwd is None
        assert sent.stdin == "p"
        assert sent.timeout == 5
        assert sent.env == {"PATH": "/usr/bin", "A": "turn"}
        assert confinement.wraps == [WrapCall(("cli",), "/workspace", ("A",))]

    def test_reaps_are_recorded(self) -> None:
        confinement = FakeConfinement()
        confinement.reap()
        assert confinement.reaps == 1
