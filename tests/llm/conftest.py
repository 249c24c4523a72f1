"""Fixtures for the LLM client tests: a loopback server, a recording sleep, a client factory."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from llm_helpers import SECRET, RecordingSleep

from twistbench.llm.client import LLMClient, LLMConfig
from twistbench.llm.loopback import LoopbackServer


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def make_client(server: LoopbackServer, sleep: RecordingSleep
                ) -> Iterator[Callable[..., LLMClient]]:
    """Clients against the fixture server with a recording sleep; closed after the test."""
    made: list[LLMClient] = []

    def factory(*, cache=None, rng: random.Random | None = None, clock=None,
                **options) -> LLMClient:
        options.setdefault("base_url", server.base_url)
        options.setdefault("model", "loopback-model")
        options.setdefault("api_key", SECRET)
        options.setdefault("timeout_s", 5.0)
        extra = {"clock": clock} if clock is not None else {}
        client = LLMClient(LLMConfig(**options), cache=cache, sleep=sleep,
                           rng=rng or random.Random(7), **extra)
        made.append(client)
        return client

    yield factory
    for client in made:
        client.close()

