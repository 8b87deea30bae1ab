"""``model/openai/warm.py``: which TLS context a provider's client gets, and that the one for an
``http://`` endpoint fails closed.

An ``http://`` endpoint (a local llama.cpp, vLLM or Ollama server) never needs TLS, so its
client gets a strict context with no trust anchors instead of certifi's bundle (25-80 ms to
build). These tests hold that this context still *verifies*: a TLS server it were ever sent to
is refused, not trusted. The server is real (``asyncio`` TLS on 127.0.0.1, a certificate made by
the ``openssl`` command for this test), and so is the client (httpx, as the provider builds it).
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from acp_agent.model.config import parse_providers
from acp_agent.model.openai.warm import ssl_context
from acp_agent.model.registry import ModelCatalog

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
async def tls_server(certificate: tuple[Path, Path]) -> AsyncIterator[str]:
    """An HTTPS server on 127.0.0.1 answering every request ``200 ok``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # the client refused the handshake
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"https://127.0.0.1:{port}/"


async def test_the_context_of_an_http_endpoint_refuses_any_tls_server(
    tls_server: str, certificate: tuple[Path, Path]
) -> None:
    context = ssl_context("http://127.0.0.1:8080/v1")
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    async with httpx.AsyncClient(verify=context) as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(tls_server)
    # the server itself is fine: a context that trusts its certificate gets the answer
    trusting = ssl.create_default_context(cafile=str(certificate[0]))
    async with httpx.AsyncClient(verify=trusting) as client:
        assert (await client.get(tls_server)).text == "ok"


async def test_the_context_of_an_https_endpoint_trusts_certifi_and_is_shared(
    tls_server: str,
) -> None:
    first = ssl_context("https://api.openai.com/v1")
    assert first is ssl_context("HTTPS://llm.example.com/v1")  # built once per process
    assert first.cert_store_stats()["x509_ca"] > 0  # certifi's bundle
    assert ssl_context("http://127.0.0.1:8080/v1").cert_store_stats()["x509_ca"] == 0
    async with httpx.AsyncClient(verify=first) as client:  # a self-signed server: refused too
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(tls_server)


def test_the_catalog_says_where_a_model_is_reached() -> None:
    providers = parse_providers(
        '[providers.local]\nbase_url = "http://127.0.0.1:8080/v1"\napi_key_env = ""\n'
        'models = ["qwen3"]\n',
        Path("config.toml"),
    )
    catalog = ModelCatalog("local:qwen3", providers, env={"OPENAI_API_KEY": "k"})
    assert catalog.base_url("local:qwen3") == "http://127.0.0.1:8080/v1"
    assert catalog.base_url("openai:gpt-4.1") == "https://api.openai.com/v1"
    assert catalog.base_url("script:/tmp/s.jsonl") is None
    assert catalog.base_url(None) is None
