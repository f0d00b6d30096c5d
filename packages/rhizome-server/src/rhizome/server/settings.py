"""What a server is started with, checked before it binds: the address, the API key, CORS and
the request size limit."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from rhizome.core.errors import ConfigurationError

API_KEY_ENV = "RHIZOME_API_KEY"
DEFAULT_MAX_BODY = 16 * 1024 * 1024
"""Largest request body accepted (16 MiB): a batch of documents, never a whole corpus."""
KEEP_ALIVE_SECONDS = 75
"""How long the server keeps an idle connection open for the client's next request. uvicorn's
default, 5 s, is exactly how long httpx (under the OpenAI and Ollama Python clients) keeps an
idle connection in its pool: a client could send on a connection the server was closing at that
moment and get a dropped connection (``httpx.ReadError``). The server's side must be the longer."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine reaches (``localhost``, 127.0.0.0/8,
    ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


@dataclass(frozen=True)
class ServerSettings:
    """The server's settings (see ``rhizome serve --help``)."""

    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = None
    """Required by every request but ``/health`` when set; writes are refused without it."""
    cors: tuple[str, ...] = ()
    """Origins a browser page may call the server from (none: CORS stays off)."""
    max_body: int = DEFAULT_MAX_BODY
    read_only: bool = False
    """Open the indexes read-only: writes are refused, another process may write meanwhile."""
    agent_llm: str | None = None
    """The chat model (``ollama:MODEL``) that runs ``rhizome/agent``; none: its offline router."""
    mcp_writes: bool = False
    """Offer the MCP tools that insert and delete documents at ``/mcp`` (they need the key too)."""

    def check(self) -> ServerSettings:
        """Refuse settings that would expose the indexes: a non-loopback address without an
        API key, an empty key, a nonsensical port or size limit."""
        if self.api_key is not None and not self.api_key.strip():
            raise ConfigurationError(f"the API key is empty; give --api-key KEY (or {API_KEY_ENV}) a real secret, or leave both unset")
        if not is_loopback(self.host) and not self.api_key:
            raise ConfigurationError(
                f"refusing to listen on {self.host}: any machine that reaches it could read the indexes. "
                f"Set an API key (--api-key KEY or {API_KEY_ENV}=KEY; clients send it as 'Authorization: Bearer KEY'), "
                "or keep the default --host 127.0.0.1"
            )
        if not 0 <= self.port <= 65535:
            raise ConfigurationError(f"--port must be between 0 and 65535, got {self.port}")
        if self.max_body < 1024:
            raise ConfigurationError(f"--max-body must be at least 1024 bytes, got {self.max_body}")
        return self
