from __future__ import annotations

import pickle
from importlib.metadata import EntryPoint

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import AgentShimError, UnknownProviderError
from agentshim.core.plugin import ProviderPlugin
from agentshim.providers import (
    DEFAULT_CATALOG,
    get_plugin,
    get_provider,
    provider_names,
)
from agentshim.providers.catalog import LazyPlugin, ProviderCatalog
from agentshim.providers.discovery import discover

BUILTINS = ("claude", "codex", "gemini", "opencode", "copilot", "pi")


class TestCatalog:
    def test_builtins_in_order(self) -> None:
        assert provider_names() == BUILTINS

    @pytest.mark.parametrize("name", BUILTINS)
    def test_each_builtin_resolves_to_a_plugin_and_a_provider(self, name: str) -> None:
        plugin = get_plugin(name)
        assert isinstance(plugin, ProviderPlugin)
        assert plugin.name == name
        assert get_provider(name).profile.name == name

    def test_unknown_name_lists_the_known_ones(self) -> None:
        with pytest.raises(UnknownProviderError, match="claude"):
            get_provider("nope")

    def test_an_unknown_name_is_an_agentshim_error_and_a_key_error(self) -> None:
        with pytest.raises(AgentShimError) as raised:
            CliAgent("nope")
        error = raised.value
        assert isinstance(error, UnknownProviderError)
        assert isinstance(error, KeyError)
        copy = pickle.loads(pickle.dumps(error))
        assert (copy.name, copy.known, str(copy)) == (error.name, error.known, str(error))

    def test_with_plugin_returns_a_new_catalog(self) -> None:
        extra = LazyPlugin("claude2", "agentshim.providers.claude.plugin:PLUGIN")
        bigger = DEFAULT_CATALOG.with_plugin(extra)
        assert "claude2" in bigger
        assert "claude2" not in DEFAULT_CATALOG
        assert len(bigger) == len(DEFAULT_CATALOG) + 1

    def test_duplicate_names_fail(self) -> None:
        with pytest.raises(ValueError, match="already"):
            DEFAULT_CATALOG.with_plugin(get_plugin("claude"))

    def test_lazy_plugin_must_declare_its_own_name(self) -> None:
        catalog = ProviderCatalog(
            {"x": LazyPlugin("x", "agentshim.providers.claude.plugin:PLUGIN")}
        )
        with pytest.raises(ValueError, match="declares provider"):
            catalog.plugin("x")


def _entry_point(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group="agentshim.providers")


class TestDiscovery:
    def test_adds_a_plugin_and_skips_broken_and_duplicate_ones(self) -> None:
        log: list[str] = []
        found = [
            _entry_point("mine", "tests.unit.providers.sample_plugin:PLUGIN"),
            _entry_point("broken", "no_such_module_anywhere:PLUGIN"),
            _entry_point("dup", "agentshim.providers.claude.plugin:PLUGIN"),
            _entry_point("notaplugin", "tests.unit.providers.sample_plugin:NOT_A_PLUGIN"),
        ]
        catalog = discover(DEFAULT_CATALOG, log=log.append, found=found)
        assert catalog.names() == (*BUILTINS, "sample")
        assert catalog.plugin("sample").profile.display_name == "Sample CLI"
        assert any("broken" in line and "failed to load" in line for line in log)
        assert any("already in the catalog" in line for line in log)
        assert any("not a ProviderPlugin" in line for line in log)
        assert DEFAULT_CATALOG.names() == BUILTINS

    def test_installed_distribution_is_discovered(self, tmp_path: object) -> None:
        import sys
        from pathlib import Path

        site = Path(str(tmp_path))
        dist = site / "agentshim_sample-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: agentshim-sample\nVersion: 1.0\n"
        )
        (dist / "entry_points.txt").write_text(
            "[agentshim.providers]\nsample = tests.unit.providers.sample_plugin:PLUGIN\n"
        )
        sys.path.insert(0, str(site))
        try:
            from agentshim.providers import discover as discover_installed

            assert "sample" in discover_installed().names()
        finally:
            sys.path.remove(str(site))
