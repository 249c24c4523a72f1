"""No secret reaches a file or the terminal, in any form: every byte of every file a run writes,
and everything `twist run`, `twist conform` and `twist trace` print, is searched for every
6-character piece of every spelling of each secret."""

from __future__ import annotations

import contextlib
import io
import json
from urllib.parse import quote, quote_plus

import pytest

from twistbench.cli import run_cli
from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer

API_KEY = 'sk-"Quo\\te\'-ÄKEY-7f3b9c2e1d'  # a quote, a backslash, non-ASCII
URL_PASSWORD = "pw-9hQ2xZ-url"
ENV_TOKEN = "env-tok-5Rt8Lm3Kq"


def spellings(secret: str) -> set[str]:
    once = json.dumps(secret, ensure_ascii=False)[1:-1]
    return {secret, once, json.dumps(secret)[1:-1], json.dumps(once)[1:-1], repr(secret)[1:-1],
            quote(secret, safe=""), quote_plus(secret)}


def pieces() -> set[bytes]:
    out = set()
    for secret in (API_KEY, URL_PASSWORD, ENV_TOKEN):
        for form in spellings(secret):
            data = form.encode("utf-8")
            out |= {data[i:i + 6] for i in range(len(data) - 5)}
    return out


class SecretEcho(BaseSystem):
    """Echoes its secrets back in every way a careless system might."""

    name = "secret-echo"
    capabilities = Capabilities(recall=True, check_alignment=True, retrieve=True, lineage=True)

    def __init__(self, api_key: str = "", endpoint: str = ""):
        self.api_key = api_key
        self.endpoint = endpoint

    def config(self):
        return {"api_key": self.api_key, "endpoint": self.endpoint, "max_tokens": 512,
                "note": f"calling {self.endpoint} with {self.api_key}"}

    def recall(self, query):
        k = self.api_key
        return Answer(text=f"raw {k} json {json.dumps(k)} url {quote(k, safe='')} "
                           f"repr {k!r} endpoint {self.endpoint}")

    def check_alignment(self, draft):
        raise ValueError("x" * 1990 + self.api_key)  # cut at 2,000 characters

    def retrieve(self, query, k):
        raise RuntimeError(f"GET {self.endpoint}/search?key={quote_plus(self.api_key)} failed")

    def lineage(self):
        return []


def invoke(*args) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli([str(a) for a in args])
    return code, out.getvalue() + err.getvalue()


def leaks(data: bytes) -> list[bytes]:
    return sorted(p for p in pieces() if p in data)[:5]


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_TOKEN)


def test_no_secret_in_any_file_or_on_the_terminal(tmp_path, env):
    spec = f"{__file__}:SecretEcho"
    opts = ["-S", f"api_key={API_KEY}", "-S",
            f"endpoint=https://bob:{URL_PASSWORD}@api.example.com/v1"]
    printed = []
    code, text = invoke("run", "-d", "demo", "-s", spec, *opts, "--no-progress",
                        "--max-error-rate", "1", "-o", tmp_path / "runs")
    assert code == 0, text
    printed.append(text)
    code, text = invoke("conform", spec, *opts)
    printed.append(text)
    code, text = invoke("trace", "-s", spec, *opts, "-d", "demo", "-o", tmp_path / "trace")
    assert code == 1  # every retrieve raised
    printed.append(text)
    code, text = invoke("report", tmp_path / "runs", "-o", tmp_path / "report")
    assert code == 0, text
    printed.append(text)
    files = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert len(files) >= 8
    for f in files:
        assert not leaks(f.read_bytes()), (f, leaks(f.read_bytes()))
    for text in printed:
        assert not leaks(text.encode("utf-8")), leaks(text.encode("utf-8"))
    items = (tmp_path / "runs" / SecretEcho.name / "items.jsonl").read_text()  # named like its row
    assert "***redacted***" in items  # the echo was there, and was scrubbed
    man = json.loads(next(tmp_path.rglob("manifest.json")).read_text())
    assert man["system"]["config"]["max_tokens"] == 512  # a name with "token" inside it


def test_the_check_can_fail():
    # The search above finds a secret when one is there.
    assert leaks(f"... {API_KEY[:8]} ...".encode())
    assert leaks(json.dumps({"k": API_KEY}).encode())
    assert leaks(quote(API_KEY, safe="").encode())
    assert not leaks(b"max_tokens tokenizers")
