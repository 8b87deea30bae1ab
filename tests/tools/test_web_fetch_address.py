"""``web_fetch`` refuses loopback, private, link-local and cloud-metadata addresses after name
resolution and at every redirect, and connects to the address it checked; ``[web_fetch]
allow_private = true`` lifts the refusal. Against a real HTTP server on 127.0.0.1
(``loopback_http.py``); a name the system cannot resolve is mapped by an injected resolver,
and where a test needs an address that is allowed, its judge allows the test server's (only
loopback exists here). Expectations: contracts §11 (web_fetch), docs/tools.md."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.config_file import ConfigError
from acp_agent.content import TextContent
from acp_agent.options import Options
from acp_agent.process.setup import checked_setup
from acp_agent.tools.base import ToolError, ToolOutput
from acp_agent.tools.permissions import Mode
from acp_agent.tools.web_address import IPAddress, refusal
from acp_agent.tools.web_fetch import WebFetch
from acp_agent.tools.web_settings import WebFetchSettings, web_fetch_settings_from
from tests.integration.support import serve_command, tool_text, turn_updates
from tests.support.recording import RecordingClient, recorded_agent
from tests.tools.loopback_http import Loopback, loopback_server
from tests.tools.support import ScriptedAsker, call, context, finals, script

SERVER = ipaddress.ip_address("127.0.0.1")
ALLOWED = "loopback, private, link-local and cloud metadata addresses are not fetched (the "
ALLOWED += "config file's [web_fetch] allow_private = true allows them)"


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as running:
        yield running


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


class Names:
    """A resolver for made-up names; counts the questions."""

    def __init__(self, **names: str) -> None:
        self.names = {name.replace("_", "."): address for name, address in names.items()}
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        return [ipaddress.ip_address(a) for a in self.names[host].split(",")]


def server_allowed(address: IPAddress) -> str | None:
    """The real judgement, but the test server's address stands for a public one."""
    return None if address == SERVER else refusal(address)


@pytest.mark.parametrize("mode", [Mode.FULL_ACCESS, Mode.ASK, Mode.AUTO_EDIT])
async def test_loopback_is_refused_by_default_in_every_mode(
    server: Loopback, workspace: Path, mode: Mode
) -> None:
    ctx = context(workspace, mode, ScriptedAsker(["allow_once"]))
    url = server.url("/plain.txt")
    with pytest.raises(ToolError) as refused:
        await WebFetch().run({"url": url}, ctx)
    assert (
        str(refused.value)
        == f"web_fetch: refused {url}: 127.0.0.1 is a loopback address: {ALLOWED}"
    )
    assert server.requests == [], "nothing was sent"


async def test_allow_private_fetches_loopback(server: Loopback, workspace: Path) -> None:
    output = await WebFetch(WebFetchSettings(allow_private=True)).run(
        {"url": server.url("/plain.txt")}, context(workspace)
    )
    assert text(output).endswith("\n\ncafé\n") and server.requests == ["/plain.txt"]


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("169.254.169.254", "a cloud metadata address"),
        ("[fd00:ec2::254]", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("[::ffff:169.254.169.254]", "a cloud metadata address"),
        ("[::ffff:127.0.0.1]", "a loopback address"),
        ("[::1]", "a loopback address"),
        ("127.1.2.3", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("192.168.0.1", "a private address"),
        ("[fd12::1]", "a private address"),
        ("169.254.1.1", "a link-local address"),
        ("[fe80::1]", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("100.64.0.1", "a non-public address"),
    ],
)
async def test_metadata_private_and_link_local_addresses_are_refused(
    workspace: Path, host: str, kind: str
) -> None:
    with pytest.raises(ToolError, match=f"is {kind}: loopback, private"):
        await WebFetch().run({"url": f"http://{host}/latest/"}, context(workspace))


async def test_names_are_judged_by_every_address_they_resolve_to(workspace: Path) -> None:
    names = Names(sneaky_test="127.0.0.1", mixed_test="8.8.8.8,10.0.0.7")
    tool, ctx = WebFetch(resolve=names), context(workspace)
    with pytest.raises(ToolError, match=r"sneaky\.test resolves to 127\.0\.0\.1, a loopback"):
        await tool.run({"url": "http://sneaky.test/"}, ctx)
    with pytest.raises(ToolError, match=r"mixed\.test resolves to 10\.0\.0\.7, a private"):
        await tool.run({"url": "https://mixed.test/"}, ctx)
    decimal = WebFetch()  # the system resolver reads 2130706433 as 127.0.0.1
    with pytest.raises(ToolError, match=r"resolves to 127\.0\.0\.1, a loopback address"):
        await decimal.run({"url": "http://2130706433/"}, ctx)


async def test_the_connection_goes_to_the_checked_address_with_the_name_as_host(
    server: Loopback, workspace: Path
) -> None:
    """``docs.test`` resolves only through the injected resolver, once: the request reached
    the server, so it went to the address checked, with ``Host: docs.test:PORT``."""
    names = Names(docs_test="127.0.0.1")
    tool = WebFetch(resolve=names, judge=server_allowed)
    url = server.url("/plain.txt", "docs.test")
    output = await tool.run({"url": url}, context(workspace))
    assert text(output).startswith(f"URL: {url}\nStatus: 200 OK")
    assert (names.asked, server.hosts) == (["docs.test"], [f"docs.test:{server.port}"])


async def test_a_redirect_to_a_refused_address_is_refused(
    server: Loopback, workspace: Path
) -> None:
    names = Names(docs_test="127.0.0.1", internal_test="10.0.0.7")
    tool, ctx = WebFetch(resolve=names, judge=server_allowed), context(workspace)
    metadata = "http://169.254.169.254/latest/meta-data/"
    with pytest.raises(ToolError, match=f"refused {metadata}: 169.254.169.254 is a cloud"):
        await tool.run({"url": server.url("/to-metadata", "docs.test")}, ctx)
    internal = server.url("/plain.txt", "internal.test")
    with pytest.raises(ToolError, match=f"refused {internal}: internal.test resolves to 10.0"):
        await tool.run({"url": server.url("/to-internal", "docs.test")}, ctx)
    assert server.requests == ["/to-metadata", "/to-internal"], "no refused hop was sent"


def test_the_web_fetch_table_is_checked() -> None:
    path = Path("/etc/acp-agent.toml")
    assert web_fetch_settings_from({}, path) == WebFetchSettings(allow_private=False)
    table = {"web_fetch": {"allow_private": True}}
    assert web_fetch_settings_from(table, path) == WebFetchSettings(allow_private=True)
    for bad, message in (
        (
            {"allow_private": "yes"},
            r"web_fetch: Expected `bool`, got `str` - at `\$.allow_private`",
        ),
        ({"allow_privat": True}, "web_fetch: Object contains unknown field `allow_privat`"),
        (3, "web_fetch: Expected `object`, got `int`"),
    ):
        with pytest.raises(ConfigError, match=f"^/etc/acp-agent.toml: {message}"):
            web_fetch_settings_from({"web_fetch": bad}, path)


def test_a_bad_web_fetch_table_stops_the_server_before_it_serves(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[web_fetch]\nallow_private = 1\n", encoding="utf-8")
    options = Options(None, tmp_path / "state", config, "info", None, 1 << 20)
    with pytest.raises(ConfigError, match="web_fetch: Expected `bool`, got `int`"):
        checked_setup(options)


async def test_over_the_wire_loopback_is_refused_unless_the_config_allows_it(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    allowing = tmp_path / "allowing.toml"
    allowing.write_text("[web_fetch]\nallow_private = true\n", encoding="utf-8")
    with loopback_server() as server:
        url = server.url("/plain.txt")
        outcomes = []
        for config in (None, allowing):
            client = RecordingClient(real_fs=True, permission="allow_once")
            path = script(tmp_path, call("c1", "web_fetch", url=url))
            extra = ["--config", str(config)] if config else []
            async with recorded_agent(client, serve_command(path, *extra), env=agent_env) as agent:
                sid = await agent.handshake(workspace)
                await agent.prompt_text(sid, "go")
                (result,) = finals(turn_updates(agent, sid, "go"))
            outcomes.append((result["status"], tool_text(result)))
    (refused_status, refused), (fetched_status, fetched) = outcomes
    assert (refused_status, refused) == (
        "failed",
        f"web_fetch: refused {url}: 127.0.0.1 is a loopback address: {ALLOWED}",
    )
    assert fetched_status == "completed" and fetched.endswith("\n\ncafé\n")
    assert server.requests == ["/plain.txt"], "only the allowed fetch reached the server"
