"""The HTTP client (`-s http://host:port`): responses validated, errors per item, secrets
redacted, one connection reused, the conversation closed on the server."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.records import SystemCallError
from twistbench.runs.guard import GuardedSystem
from twistbench.sanitize import Redactor, is_secret_name
from twistbench.systems import build_system, make_system, system_options
from twistbench.systems.http import HttpSystem, InvalidResponse, ServerError
from twistbench.wire import CONTRACT_VERSION, VERSION_HEADER
from twistbench.wire.server import ContractServer

CAPS = {"contract": CONTRACT_VERSION, "name": "fake",
        "capabilities": {"recall": True, "retrieve": True}, "config": {}}


class FakeServer(ThreadingHTTPServer):
    """Answers every POST with what the test put in `answers[path]`: (status, body bytes)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, bytes]] = {}
        self.seen: list[tuple[str, dict[str, str], bytes]] = []
        self.connections: set[int] = set()
        super().__init__(("127.0.0.1", 0), _FakeHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.path, dict(self.headers), body))
        self.server.connections.add(self.client_address[1])
        if self.path == "/capabilities":
            status, data = 200, json.dumps(CAPS).encode()
        else:
            status, data = self.server.answers.get(self.path, (200, b'{"ok": true}'))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer  # noqa: N815
    do_POST = _answer  # noqa: N815


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    srv = FakeServer()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def served_flat_rag() -> Iterator[ContractServer]:
    srv = ContractServer(functools.partial(build_system, "flat-rag", {}))
    srv.start_in_thread()
    yield srv
    srv.stop()


def test_a_served_system_answers_like_the_system_itself(served_flat_rag):
    conv = demo_dataset().conversations[0]
    local = build_system("flat-rag")
    remote, entry = make_system(served_flat_rag.url)
    assert entry.name == served_flat_rag.url and remote.name == "flat-rag"
    assert remote.capabilities == local.capabilities
    for s in (local, remote):
        s.reset(conv.id)
        for _, events in conv.sessions():
            s.ingest(events)
    assert remote.recall("renewal").model_dump() == local.recall("renewal").model_dump()
    assert [h.model_dump() for h in remote.retrieve("renewal", 3)] == \
        [h.model_dump() for h in local.retrieve("renewal", 3)]
    with pytest.raises(NotImplementedError, match="declines resolve"):
        remote.resolve("t1")  # 501: a declined call, as in-process


def test_close_frees_the_conversation_on_the_server(served_flat_rag):
    remote = HttpSystem(served_flat_rag.url)
    remote.reset("c1")
    assert "c1" in served_flat_rag.instances
    remote.close()
    assert served_flat_rag.instances == {}
    remote.conversation_id = "c1"  # a call on a closed conversation is refused by the server
    with pytest.raises(ServerError, match="409 no_conversation"):
        remote.recall("anything")


@pytest.mark.parametrize("status,body,error,match", [
    (200, b"not json", InvalidResponse, "does not fit the contract"),
    (200, b'{"evidence": []}', InvalidResponse, "text: Field required"),
    (200, b'{"text": "x", "evidence": "t1"}', InvalidResponse, "evidence"),
    (500, b"<html>oops</html>", ServerError, "HTTP 500, not a contract error"),
    (500, b'{"error": {"kind": "system_error", "message": "boom"}}', ServerError, "boom"),
    (501, b'{"error": {"kind": "declined", "message": "no recall"}}', NotImplementedError,
     "no recall"),
    (200, b'{"text": "' + b"x" * 5000 + b'"}', InvalidResponse, "max_response_bytes"),
])
def test_a_bad_response_raises(fake, status, body, error, match):
    fake.answers["/recall"] = (status, body)
    system = HttpSystem(fake.url, max_response_bytes=4000)
    system.reset("c1")
    with pytest.raises(error, match=match):
        system.recall("q")


def test_a_bad_response_is_an_error_of_the_item_never_a_score(fake):
    fake.answers["/recall"] = (200, b'{"evidence": ["t1"]}')
    guarded = GuardedSystem(HttpSystem(fake.url), 10.0)
    guarded.reset("c1")
    with pytest.raises(SystemCallError) as info:
        guarded.recall("q")
    assert info.value.kind == "exception" and "does not fit the contract" in info.value.message
    guarded.close()


def test_every_request_carries_the_contract_version_and_reuses_one_connection(fake):
    fake.answers["/recall"] = (200, b'{"text": "a", "evidence": ["t1"]}')
    fake.answers["/retrieve"] = (200, b'{"hits": [{"id": "t1", "score": 0.5}]}')
    system = HttpSystem(fake.url)
    system.reset("c1")
    assert system.recall("q").evidence == ["t1"]
    assert system.retrieve("q", 2)[0].score == 0.5
    assert all(h.get(VERSION_HEADER) == CONTRACT_VERSION for _, h, _ in fake.seen)
    assert len(fake.connections) == 1  # keep-alive: one TCP connection for every call
    path, _, body = fake.seen[-1]
    assert path == "/retrieve"
    assert json.loads(body) == {"conversation_id": "c1", "query": "q", "k": 2}


def test_the_bearer_token_is_sent_and_never_shown(fake, monkeypatch):
    secret = "s3cr3t-t0ken-value"
    monkeypatch.setenv("MY_SERVICE", secret)  # a name the harness would not know is secret
    fake.answers["/recall"] = (500, json.dumps(
        {"error": {"kind": "system_error", "message": f"bad token {secret}"}}).encode())
    system = HttpSystem(fake.url, api_key_env="MY_SERVICE")
    system.reset("c1")
    assert fake.seen[-1][1]["Authorization"] == f"Bearer {secret}"
    with pytest.raises(ServerError) as info:
        system.recall("q")
    assert secret not in str(info.value) and "redacted" in str(info.value)
    assert secret not in json.dumps(system.config())
    assert system.config()["key_sent"] is True
    # No option or config key of the client is named like a secret, so the manifest keeps the
    # variable's name (the value is what is secret, and never leaves the client).
    assert not any(is_secret_name(k) for k in system.config())
    assert not any(is_secret_name(k) for k in system_options(HttpSystem))


def test_a_served_system_with_a_token_refuses_calls_without_it(monkeypatch):
    srv = ContractServer(functools.partial(build_system, "flat-rag", {}), token="tok-123456")
    srv.start_in_thread()
    try:
        monkeypatch.delenv("TWIST_HTTP_TOKEN", raising=False)
        with pytest.raises(ServerError, match="401 unauthorized"):
            HttpSystem(srv.url)
        monkeypatch.setenv("TWIST_HTTP_TOKEN", "tok-123456")
        assert HttpSystem(srv.url).name == "flat-rag"
    finally:
        srv.stop()


def test_an_unreachable_server_is_bad_input_naming_the_url():
    with pytest.raises(InputError, match="constructing system http://127.0.0.1:9"):
        make_system("http://127.0.0.1:9", {"timeout_s": "2"})


def test_credentials_in_the_url_are_refused_and_redacted_when_shown():
    with pytest.raises(InputError, match="not in the URL") as info:
        make_system("http://user:hunter2-pw@127.0.0.1:9")
    assert "hunter2-pw" not in Redactor({}).text(str(info.value))


RELEASE = threading.Event()


class BlockingRecall:
    """A system whose recall("block") waits until the test releases it."""

    name = "blocking"

    def __init__(self) -> None:
        from twistbench.contract import Capabilities

        self.capabilities = Capabilities(recall=True)

    def reset(self, conversation_id: str) -> None:
        pass

    def ingest(self, events):
        return None

    def recall(self, query: str):
        if query == "block":
            RELEASE.wait(60)
        return {"text": query, "evidence": []}


def test_a_call_past_the_timeout_is_an_error_and_the_conversation_can_restart():
    RELEASE.clear()
    server = ContractServer(BlockingRecall)
    server.start_in_thread()
    try:
        client = HttpSystem(server.url, timeout_s=0.5)
        client.reset("c1")
        with pytest.raises(ConnectionError, match="recall: ReadTimeout"):
            client.recall("block")
        # The abandoned call still holds the old instance; a reset (the runner's restore after
        # a timeout) gets a fresh one at once, and the conversation goes on.
        fresh = HttpSystem(server.url, timeout_s=0.5)
        fresh.reset("c1")
        assert fresh.recall("hello").text == "hello"
        fresh.close()
    finally:
        RELEASE.set()
        server.stop()


def test_https_with_a_private_authority_and_a_bearer_token(tmp_path, monkeypatch):
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on the PATH: no certificate for the https test")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server = ContractServer(functools.partial(build_system, "flat-rag", {"retriever": "lexical"}),
                            token="tls-token-123456")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.start_in_thread()
    url = server.url.replace("http://", "https://")
    try:
        monkeypatch.setenv("TWIST_HTTP_TOKEN", "tls-token-123456")
        with pytest.raises(ConnectionError, match="CERTIFICATE_VERIFY_FAILED|certificate"):
            HttpSystem(url)  # an unknown authority is refused, never silently trusted
        system = HttpSystem(url, ca_file=str(cert))
        system.reset("c1")
        assert system.recall("anything").text
        system.close()
    finally:
        server.stop()


def test_a_server_of_another_contract_version_is_refused(fake, monkeypatch):
    monkeypatch.setitem(CAPS, "contract", "2")
    with pytest.raises(InputError, match="the server speaks contract '2'"):
        make_system(fake.url)
