"""Model specs, the ``[providers]`` config table, and where keys and base URLs come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.config_file import ConfigError
from acp_agent.hooks.config import load_config
from acp_agent.model.config import ProviderEntry, load_providers, parse_providers
from acp_agent.model.openai import OpenAICompatible, Secret
from acp_agent.model.registry import BadModelSpec, KeyNeeded, ModelCatalog, Unconfigured
from acp_agent.model.script import ScriptModel

CONFIG = """
[[hooks.prompt_submit]]
command = ["true"]

[providers.openai]
models = ["gpt-4.1", "gpt-4.1-mini"]
max_retries = 5

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
api_key_env = ""
models = ["qwen3"]
timeout_s = 30

[providers.corp]
base_url = "https://llm.example.com/v1"
api_key_env = "CORP_LLM_KEY"
"""


def config(text: str = CONFIG) -> dict[str, ProviderEntry]:
    return parse_providers(text, Path("config.toml"))


def endpoint_of(catalog: ModelCatalog, spec: str) -> OpenAICompatible:
    provider = catalog.provider(spec)
    assert isinstance(provider, OpenAICompatible)
    return provider


def test_specs_pick_providers_and_one_instance_each() -> None:
    catalog = ModelCatalog("openai:gpt-4.1", config(), env={"OPENAI_API_KEY": "k"})
    assert catalog.provider("openai:gpt-4.1") is catalog.provider("openai:gpt-4.1")
    assert endpoint_of(catalog, "deepseek:deepseek-flash").name == "deepseek:deepseek-flash"
    assert isinstance(catalog.provider("script:/x.jsonl"), ScriptModel)
    assert isinstance(catalog.provider(None), Unconfigured)


@pytest.mark.parametrize("spec", ["gpt-4", "nope:model", "openai:", "script:"])
def test_bad_specs_fail_at_startup_naming_the_providers(spec: str) -> None:
    with pytest.raises(BadModelSpec, match="deepseek, local, openai"):
        ModelCatalog(spec, {"local": ProviderEntry(base_url="http://h/v1")}, env={})


def test_built_in_defaults_env_and_config() -> None:
    env = {"OPENAI_API_KEY": " sk-1 ", "DEEPSEEK_API_KEY": "ds"}
    catalog = ModelCatalog("openai:gpt-4.1", config(), env)
    openai = endpoint_of(catalog, "openai:gpt-4.1")
    assert openai.endpoint.base_url == "https://api.openai.com/v1"
    assert openai.endpoint.api_key is not None and openai.endpoint.api_key.reveal() == "sk-1"
    assert openai.retry.max_retries == 5
    deepseek = endpoint_of(catalog, "deepseek:deepseek-v4-pro").endpoint
    assert (deepseek.base_url, deepseek.api_key_env) == (
        "https://api.deepseek.com",
        "DEEPSEEK_API_KEY",
    )
    local = endpoint_of(catalog, "local:qwen3").endpoint
    assert (local.api_key, local.api_key_env, local.timeout_s) == (None, None, 30)


def test_base_url_env_wins_over_the_config_file() -> None:
    text = '[providers.openai]\nbase_url = "http://from-config/v1"\n'
    assert endpoint_of(
        ModelCatalog("openai:m", config(text), {}), "openai:m"
    ).endpoint.base_url == ("http://from-config/v1")
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    assert endpoint_of(
        ModelCatalog("openai:m", config(text), env), "openai:m"
    ).endpoint.base_url == ("http://127.0.0.1:9/v1")


def test_a_base_url_variable_without_a_scheme_stops_the_server() -> None:
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL: expected an http"):
        ModelCatalog("openai:m", {}, {"OPENAI_BASE_URL": "localhost:8080/v1"})


def test_api_key_env_renames_the_variable() -> None:
    text = '[providers.openai]\napi_key_env = "WORK_OPENAI_KEY"\n'
    catalog = ModelCatalog("openai:m", config(text), {"OPENAI_API_KEY": "ignored"})
    assert catalog.key_needed("openai:m") == KeyNeeded("openai", "WORK_OPENAI_KEY")


def test_choices_are_the_default_then_every_listed_model() -> None:
    catalog = ModelCatalog("deepseek:deepseek-flash", config(), env={})
    assert catalog.choices() == [
        "deepseek:deepseek-flash",
        "openai:gpt-4.1",
        "openai:gpt-4.1-mini",
        "local:qwen3",
    ]
    assert catalog.offers_selector()


def test_without_a_model_flag_the_first_listed_model_is_the_default() -> None:
    assert ModelCatalog(None, config(), env={}).default == "openai:gpt-4.1"
    assert ModelCatalog(None, {}, env={}).default is None


def test_a_script_only_server_offers_no_model_selector() -> None:
    assert not ModelCatalog("script:/s.jsonl", {}, env={}).offers_selector()


def test_keys_needed_names_each_provider_once_with_what_to_set() -> None:
    catalog = ModelCatalog("corp:big", config(), env={})
    assert catalog.keys_needed() == [
        KeyNeeded("corp", "CORP_LLM_KEY"),
        KeyNeeded("openai", "OPENAI_API_KEY"),
    ]
    assert catalog.key_needed("local:qwen3") is None
    assert catalog.key_needed("script:/s") is None
    assert "CORP_LLM_KEY" in catalog.keys_needed()[0].message
    with_key = ModelCatalog("corp:big", config(), env={"CORP_LLM_KEY": "x", "OPENAI_API_KEY": "y"})
    assert with_key.keys_needed() == []


def test_secrets_never_show_themselves() -> None:
    secret = Secret("sk-live-123")
    assert "sk-live-123" not in repr(secret) + str(secret) + f"{secret}"
    assert secret.scrub("bad key sk-live-123!") == "bad key [redacted]!"
    endpoint = endpoint_of(
        ModelCatalog("openai:m", {}, {"OPENAI_API_KEY": "sk-live-123"}), "openai:m"
    )
    assert "sk-live-123" not in repr(endpoint.endpoint)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[providers.x]\nbase_url = "http://h"\nbase_ulr = "y"\n', r"providers\.x: .*base_ulr"),
        ('[providers.Bad]\nbase_url = "http://h"\n', "provider name"),
        ('[providers.script]\nbase_url = "http://h"\n', "provider name"),
        ('[providers.x]\nbase_url = "ftp://h"\n', r"providers\.x\.base_url"),
        ("[providers.x]\nmax_retries = -1\n", "max_retries"),
        ('[providers.x]\nmodels = [""]\n', r"models\[0\]"),
        ("[providers.x\n", "invalid TOML"),
        (
            "[providers.x]\ncontext_window = 0\n",
            r"providers\.x\.context_window: Expected `int` >= 1",
        ),
        ('[providers.x]\ntool_choice = "any"\n', r"providers\.x\.tool_choice: Invalid enum"),
        (
            '[providers.x]\nmax_tokens_field = "max_output"\n',
            r"providers\.x\.max_tokens_field: Invalid enum",
        ),
        ('[providers.x]\nthinking = "on"\n', r"providers\.x\.thinking: Invalid enum"),
        ("[providers.x]\ninput_price = -1\n", r"providers\.x\.input_price: Expected `float`"),
        (
            '[providers.x]\nreasoning_echo = "yes"\n',
            r"providers\.x\.reasoning_echo: Expected `bool",
        ),
        (
            '[providers.x.model_options."qwen3:32b"]\nmax_output_tokens = -5\n',
            r'providers\.x\.model_options\."qwen3:32b"\.max_output_tokens: Expected `int` >= 1',
        ),
        (
            '[providers.x.model_options."m"]\ncontext_windw = 8192\n',
            r'providers\.x\.model_options\."m": .*unknown field `context_windw`',
        ),
        (
            '[providers.x.model_options."m"]\nbase_url = "http://h"\n',
            r'providers\.x\.model_options\."m": .*unknown field `base_url`',
        ),
        ("[providers.x]\nmodel_options = 3\n", r"providers\.x\.model_options: Expected `object`"),
    ],
)
def test_config_errors_name_the_file_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        parse_providers(text, Path("/etc/acp.toml"))
    assert str(error.value).startswith("/etc/acp.toml")


def test_a_provider_of_your_own_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match=r"providers\.mine: base_url is required"):
        ModelCatalog("mine:m", config("[providers.mine]\nmodels = ['m']\n"), env={})


def test_the_hooks_loader_still_reads_a_file_with_providers(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    assert len(load_config(path).hooks.prompt_submit) == 1
    assert list(load_providers(path)) == ["openai", "local", "corp"]
    assert load_providers(None) == {}
