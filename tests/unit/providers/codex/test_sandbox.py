from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.permissions import NativePermissions
from agentshim.core.provider import ArgvContext
from agentshim.providers.codex import (
    CodexProvider,
    CodexSandboxConfig,
    CodexSandboxMode,
    parse_sandbox,
)
from agentshim.providers.codex.rules import (
    RULES_FILE_NAME,
    check_codex_home,
    install_rules,
    read_rules,
    render_rules,
    rules_path,
)
from agentshim.providers.codex.sandbox import render_sandbox

BYPASS = "--dangerously-bypass-approvals-and-sandbox"

words = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
commands = st.lists(
    st.tuples(words).map(tuple) | st.lists(words, min_size=1, max_size=3).map(tuple), max_size=4
)
roots = st.lists(
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=10
    ).map(lambda s: "/" + s),
    max_size=3,
)


@st.composite
def configs(draw: st.DrawFn) -> CodexSandboxConfig:
    mode = draw(st.sampled_from(list(CodexSandboxMode)))
    policy = draw(st.sampled_from(["never", "on-request", "on-failure", "untrusted"]))
    excluded = () if mode is CodexSandboxMode.DANGER_FULL_ACCESS else tuple(draw(commands))
    if mode is not CodexSandboxMode.WORKSPACE_WRITE:
        return CodexSandboxConfig(mode, policy, excluded_commands=excluded)
    return CodexSandboxConfig(
        mode,
        policy,
        writable_roots=tuple(draw(roots)),
        network_access=draw(st.booleans()),
        exclude_slash_tmp=draw(st.booleans()),
        exclude_tmpdir_env_var=draw(st.booleans()),
        excluded_commands=excluded,
    )


class TestRender:
    def test_no_sandbox_is_the_bypass_flag(self) -> None:
        assert render_sandbox(None) == [BYPASS]

    def test_workspace_write_sets_all_four_keys_and_ignores_rules(self) -> None:
        config = CodexSandboxConfig(writable_roots=("/data", "/cache"), network_access=True)
        assert render_sandbox(config) == [
            "--config",
            'sandbox_mode="workspace-write"',
            "--config",
            'approval_policy="never"',
            "--config",
            'sandbox_workspace_write.writable_roots=["/data", "/cache"]',
            "--config",
            "sandbox_workspace_write.network_access=true",
            "--config",
            "sandbox_workspace_write.exclude_slash_tmp=false",
            "--config",
            "sandbox_workspace_write.exclude_tmpdir_env_var=false",
            "--ignore-rules",
        ]

    def test_read_only_sets_mode_and_policy_only(self) -> None:
        config = CodexSandboxConfig(CodexSandboxMode.READ_ONLY, "on-request")
        assert render_sandbox(config) == [
            "--config",
            'sandbox_mode="read-only"',
            "--config",
            'approval_policy="on-request"',
            "--ignore-rules",
        ]

    def test_excluded_commands_keep_rules_loading(self) -> None:
        config = CodexSandboxConfig(
            CodexSandboxMode.READ_ONLY, excluded_commands=(("git", "status"),)
        )
        assert "--ignore-rules" not in render_sandbox(config)

    def test_a_root_with_quotes_and_newlines_stays_one_toml_string(self) -> None:
        config = CodexSandboxConfig(writable_roots=('/we"ird\npath',))
        assert 'sandbox_workspace_write.writable_roots=["/we\\"ird\\npath"]' in render_sandbox(
            config
        )


class TestParse:
    @given(configs())
    def test_parse_inverts_render(self, config: CodexSandboxConfig) -> None:
        parsed = parse_sandbox(render_sandbox(config), excluded_commands=config.excluded_commands)
        assert parsed == config

    def test_the_bypass_flag_parses_to_none(self) -> None:
        assert parse_sandbox(["codex", "exec", BYPASS, "-"]) is None

    def test_argv_without_a_sandbox_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="no Codex sandbox") as caught:
            parse_sandbox(["codex", "exec", "-"])
        assert caught.value.field == "argv"

    def test_an_unknown_sandbox_mode_is_refused(self) -> None:
        with pytest.raises(InvalidRequestError, match="'sometimes'"):
            parse_sandbox(["--config", 'sandbox_mode="sometimes"'])

    def test_short_config_flag_and_equals_form_are_read(self) -> None:
        argv = ["-c", "sandbox_mode=read-only", "--config=approval_policy='untrusted'"]
        assert parse_sandbox(argv) == CodexSandboxConfig(CodexSandboxMode.READ_ONLY, "untrusted")


class TestConfig:
    @pytest.mark.parametrize(
        "kwargs",
        [
            {"approval_policy": "always"},
            {"writable_roots": ("relative/dir",)},
            {"mode": CodexSandboxMode.READ_ONLY, "network_access": True},
            {"mode": CodexSandboxMode.READ_ONLY, "writable_roots": ("/x",)},
            {"mode": CodexSandboxMode.DANGER_FULL_ACCESS, "excluded_commands": (("ls",),)},
            {"excluded_commands": ((),)},
            {"excluded_commands": (("git", ""),)},
            {"excluded_commands": ("git push",)},
            {"excluded_commands": (("git", "\udc80"),)},
            {"writable_roots": "/one/string"},
            {"writable_roots": ("/a\0b",)},
            {"mode": "read-only"},
        ],
    )
    def test_a_setting_that_cannot_work_is_refused(self, kwargs: dict[str, object]) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            CodexSandboxConfig(**kwargs)  # type: ignore[arg-type]
        assert caught.value.field.startswith("CodexSandboxConfig.")
        assert caught.value.field.split(".")[1] in kwargs

    def test_from_permissions(self) -> None:
        assert CodexSandboxConfig.from_permissions(NativePermissions.bypass()) is None
        assert CodexSandboxConfig.from_permissions(
            NativePermissions.read_only()
        ) == CodexSandboxConfig(CodexSandboxMode.READ_ONLY)
        assert CodexSandboxConfig.from_permissions(
            NativePermissions.workspace_write(["/srv"], network=True),
            excluded_commands=[["make", "test"]],
        ) == CodexSandboxConfig(
            writable_roots=("/srv",), network_access=True, excluded_commands=(("make", "test"),)
        )
        with pytest.raises(InvalidRequestError, match="excluded_commands"):
            CodexSandboxConfig.from_permissions(
                NativePermissions.bypass(), excluded_commands=[["ls"]]
            )


class TestRulesFile:
    def test_renders_one_allow_rule_per_command(self) -> None:
        text = render_rules([("git", "push"), ("make",)])
        rules = [line for line in text.splitlines() if not line.startswith("#")]
        assert rules == [
            'prefix_rule(pattern=["git", "push"], decision="allow")',
            'prefix_rule(pattern=["make"], decision="allow")',
        ]

    @given(commands)
    def test_read_rules_inverts_render_rules(self, excluded: list[tuple[str, ...]]) -> None:
        text = render_rules(excluded)
        assert read_rules(text) == tuple(excluded)
        rule_lines = text.split("\n")
        assert len(rule_lines) == len(excluded) + 2
        assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in "".join(rule_lines))

    @pytest.mark.parametrize(
        "line",
        [
            'prefix_rule(pattern=[ls], decision="allow")',
            'prefix_rule(pattern=["a" "b"], decision="allow")',
            'prefix_rule(pattern=["unterminated',
            'prefix_rule(pattern=["\\q"], decision="allow")',
            'prefix_rule(pattern=["\\xzz"], decision="allow")',
        ],
    )
    def test_a_malformed_rule_line_is_refused(self, line: str) -> None:
        with pytest.raises(InvalidRequestError, match="malformed rule line") as caught:
            read_rules(f"# header\n{line}\n")
        assert caught.value.field == "text"

    def test_install_writes_the_file_and_is_repeatable(self, tmp_path: Path) -> None:
        path = install_rules(tmp_path, [("ls",)])
        install_rules(tmp_path, [("ls",), ("pwd",)])
        assert path == rules_path(tmp_path) == tmp_path / "rules" / RULES_FILE_NAME
        assert read_rules(path.read_text(encoding="utf-8")) == (("ls",), ("pwd",))
        assert [p.name for p in path.parent.iterdir()] == [RULES_FILE_NAME]

    def test_install_refuses_a_home_with_other_rules(self, tmp_path: Path) -> None:
        (tmp_path / "rules").mkdir()
        (tmp_path / "rules" / "user.rules").write_text("", encoding="utf-8")
        with pytest.raises(ProviderCapabilityError, match=r"user\.rules"):
            install_rules(tmp_path, [("ls",)])

    def test_install_refuses_an_unwritable_home(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("", encoding="utf-8")
        with pytest.raises(ProviderCapabilityError, match="cannot prepare"):
            install_rules(blocker, [("ls",)])


class TestCodexHomeCheck:
    config = CodexSandboxConfig(excluded_commands=(("ls",),))

    def test_a_home_outside_every_writable_dir_is_accepted(self) -> None:
        env = {"CODEX_HOME": "/srv/codex-home", "TMPDIR": "/var/tmp/x"}
        assert check_codex_home(self.config, cwd="/work/repo", env=env) == "/srv/codex-home"

    @pytest.mark.parametrize(
        ("env", "cwd", "match"),
        [
            ({}, "/work", "absolute CODEX_HOME"),
            ({"CODEX_HOME": "rel/home"}, "/work", "absolute CODEX_HOME"),
            ({"CODEX_HOME": "/work/.codex"}, "/work", "overlaps '/work'"),
            ({"CODEX_HOME": "/work"}, "/work/sub", "overlaps '/work/sub'"),
            ({"CODEX_HOME": "/tmp/home"}, "/work", "overlaps '/tmp'"),
            ({"CODEX_HOME": "/scratch/h", "TMPDIR": "/scratch"}, "/work", "overlaps '/scratch'"),
            ({"CODEX_HOME": "/srv/home"}, None, "need the turn's cwd"),
        ],
    )
    def test_a_home_commands_could_write_is_refused(
        self, env: dict[str, str], cwd: str | None, match: str
    ) -> None:
        with pytest.raises(ProviderCapabilityError, match=match):
            check_codex_home(self.config, cwd=cwd, env=env)

    def test_a_writable_root_inside_the_home_is_refused(self) -> None:
        config = CodexSandboxConfig(
            writable_roots=("/srv/home/rules",), excluded_commands=(("ls",),)
        )
        with pytest.raises(ProviderCapabilityError, match="overlaps"):
            check_codex_home(config, cwd="/work", env={"CODEX_HOME": "/srv/home"})

    def test_excluded_tmp_dirs_may_hold_the_home(self) -> None:
        config = CodexSandboxConfig(
            exclude_slash_tmp=True, exclude_tmpdir_env_var=True, excluded_commands=(("ls",),)
        )
        env = {"CODEX_HOME": "/tmp/home", "TMPDIR": "/tmp"}
        assert check_codex_home(config, cwd="/work", env=env) == "/tmp/home"

    def test_read_only_needs_only_an_absolute_home(self) -> None:
        config = CodexSandboxConfig(CodexSandboxMode.READ_ONLY, excluded_commands=(("ls",),))
        assert check_codex_home(config, cwd=None, env={"CODEX_HOME": "/tmp/h"}) == "/tmp/h"

    def test_a_symlink_into_the_workspace_is_seen_through(self, tmp_path: Path) -> None:
        workspace = tmp_path / "work"
        (workspace / "home").mkdir(parents=True)
        link = tmp_path / "link"
        link.symlink_to(workspace / "home")
        with pytest.raises(ProviderCapabilityError, match="overlaps"):
            check_codex_home(self.config, cwd=str(workspace), env={"CODEX_HOME": str(link)})


class TestProviderWithSandbox:
    def _ctx(self, **overrides: object) -> ArgvContext:
        fields: dict[str, object] = {"binary_path": "codex", "env": {}, "cwd": "/work"}
        fields.update(overrides)
        return ArgvContext(**fields)  # type: ignore[arg-type]

    def test_sandbox_flags_replace_the_bypass_flag(self) -> None:
        provider = CodexProvider(sandbox=CodexSandboxConfig(CodexSandboxMode.READ_ONLY))
        argv = provider.build_argv(self._ctx())
        assert BYPASS not in argv
        assert argv[:8] == [
            "codex",
            "exec",
            "--config",
            'sandbox_mode="read-only"',
            "--config",
            'approval_policy="never"',
            "--ignore-rules",
            "--skip-git-repo-check",
        ]
        assert parse_sandbox(argv) == provider.sandbox

    def test_excluded_commands_are_written_to_the_dedicated_home(self, tmp_path: Path) -> None:
        home = tmp_path / "codex-home"
        # tmp_path lies under /tmp, which the sandbox would otherwise let commands write.
        config = CodexSandboxConfig(
            exclude_slash_tmp=True,
            exclude_tmpdir_env_var=True,
            excluded_commands=(("git", "status"),),
        )
        argv = CodexProvider(sandbox=config).build_argv(
            self._ctx(env={"CODEX_HOME": str(home)}, cwd=str(tmp_path / "work"))
        )
        assert "--ignore-rules" not in argv
        written = read_rules(rules_path(home).read_text(encoding="utf-8"))
        assert parse_sandbox(argv, excluded_commands=written) == config

    def test_excluded_commands_with_a_home_in_the_workspace_refuse_the_turn(
        self, tmp_path: Path
    ) -> None:
        config = CodexSandboxConfig(excluded_commands=(("git", "status"),))
        ctx = self._ctx(env={"CODEX_HOME": str(tmp_path / ".codex")}, cwd=str(tmp_path))
        with pytest.raises(ProviderCapabilityError, match="overlaps"):
            CodexProvider(sandbox=config).build_argv(ctx)
        assert not (tmp_path / ".codex").exists()
