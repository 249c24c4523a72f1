"""--embedder: onnx:DIR runs the built-in model's own runner over a directory's files, openai:MODEL
talks to a /v1/embeddings endpoint (a loopback server here), and the cache never mixes models."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from twistbench.cli import run_cli
from twistbench.errors import InputError
from twistbench.retrieval import dense, embcache, embedders

TEXTS = ["I moved to Stockholm last spring.", "ok", "My sister plays the cello."]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty embedding cache file, no in-process vectors, the built-in embedder active."""
    monkeypatch.setattr(embcache, "_shared", {})
    monkeypatch.setenv(embcache.ENV_CACHE, str(tmp_path / "emb.sqlite3"))
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    monkeypatch.setattr(dense, "_active", None)
    monkeypatch.setenv(dense.ENV_EMBEDDER, "builtin")  # restored after the test (the CLI sets it)
    return tmp_path


def _model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "minilm-copy"
    folder.mkdir()
    shutil.copy(dense.model_path(), folder / "model.onnx")
    shutil.copy(dense.tokenizer_path(), folder / "tokenizer.json")
    return folder


def test_onnx_dir_with_the_builtin_files_gives_the_builtin_vectors(fresh: Path, monkeypatch):
    builtin = dense.embed(TEXTS, cache=False)
    folder = _model_dir(fresh)
    chosen = dense.use_embedder(f"onnx:{folder}")
    assert isinstance(chosen, dense.OnnxEmbedder) and chosen.dim == dense.DIM
    mine = dense.embed(TEXTS, cache=False)
    assert np.allclose(mine, builtin, atol=1e-6)
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    # same files, another label: its own cache entries
    assert chosen.model_id() != dense.BUILTIN.model_id()
    assert chosen.model_id().split(" ", 1)[1] == dense.BUILTIN.model_id().split(" ", 1)[1]


def test_onnx_dir_reads_pooling_and_normalisation_from_sentence_transformers_files(
        fresh: Path) -> None:
    folder = _model_dir(fresh)
    builtin = dense.embed(TEXTS, cache=False)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"}]))  # no Normalize module
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    chosen = dense.use_embedder(f"onnx:{folder}")
    assert (chosen.pooling, chosen.normalize, chosen.max_tokens) == ("cls", False, 128)
    assert "pooling=cls " not in chosen.model_id() and chosen.model_id().endswith("pooling=cls")
    cls = dense.embed(TEXTS, cache=False)
    # cross-check: the first token's hidden state, computed here from the session itself
    sess, tok = chosen._load()
    enc = tok.encode_batch(TEXTS)
    feeds = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
             "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
             "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}
    wanted = {i.name for i in sess.get_inputs()}
    hidden = sess.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
    assert np.allclose(cls, hidden[:, 0, :], atol=1e-6)
    assert not np.allclose(np.linalg.norm(cls, axis=1), 1.0, atol=1e-3)  # not normalised
    assert not np.allclose(cls / np.linalg.norm(cls, axis=1, keepdims=True), builtin, atol=1e-3)


def test_onnx_dir_max_pooling_is_the_masked_maximum(fresh: Path) -> None:
    folder = _model_dir(fresh)
    (folder / "1_Pooling").mkdir()  # no modules.json: normalisation stays on (the default)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    chosen = dense.use_embedder(f"onnx:{folder}")
    assert (chosen.pooling, chosen.normalize) == ("max", True)
    got = dense.embed(TEXTS, cache=False)
    sess, tok = chosen._load()
    expected = []
    for text in TEXTS:  # one at a time: no padding, so a plain max over the tokens
        enc = tok.encode(text)
        feeds = {"input_ids": np.array([enc.ids], dtype=np.int64),
                 "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
                 "token_type_ids": np.array([enc.type_ids], dtype=np.int64)}
        wanted = {i.name for i in sess.get_inputs()}
        hidden = sess.run(None, {k: v for k, v in feeds.items() if k in wanted})[0][0]
        v = hidden.max(axis=0)
        expected.append(v / np.linalg.norm(v))
    assert np.allclose(got, np.array(expected), atol=1e-4)


@pytest.mark.parametrize("make", ["missing", "empty", "no-tokenizer", "bad-json"])
def test_a_bad_onnx_dir_is_one_line_and_exit_2(fresh: Path, capsys, make: str) -> None:
    folder = fresh / "model"
    if make != "missing":
        folder.mkdir()
    if make in ("no-tokenizer", "bad-json"):
        (folder / "model.onnx").write_bytes(b"x")
    if make == "bad-json":
        (folder / "tokenizer.json").write_text("{}")
        (folder / "modules.json").write_text("[{")
    code = run_cli(["trace", "-s", "flat-rag", "-o", str(fresh / "out"), "--embedder",
                    f"onnx:{folder}", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert {"missing": "not a directory", "empty": "model.onnx",
            "no-tokenizer": "tokenizer.json", "bad-json": "modules.json"}[make] in err
    assert not (fresh / "out").exists()


def test_onnx_dir_width_from_config_json_loads_no_model_and_is_checked(fresh: Path) -> None:
    folder = _model_dir(fresh)
    (folder / "config.json").write_text(json.dumps({"hidden_size": 384}))
    chosen = dense.use_embedder(f"onnx:{folder}")
    assert chosen.dim == 384 and chosen._session is None
    (folder / "config.json").write_text(json.dumps({"hidden_size": 10}))
    chosen = dense.use_embedder(f"onnx:{folder}")
    with pytest.raises(embedders.EmbeddingError, match="expected 10"):
        dense.embed(TEXTS)


def test_unknown_embedder_spec_is_an_input_error(fresh: Path) -> None:
    for spec in ("minilm", "onnx:", "openai:"):
        with pytest.raises(InputError):
            dense.make_embedder(spec)


def _vector(text: str, dim: int = 6) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 for b in digest[:dim]]


class _Endpoint(BaseHTTPRequestHandler):
    """/v1/embeddings with deterministic vectors (sha256 bytes of the text); `mode` scripts
    failures, `script` the replies of the next requests one by one (then `mode` again);
    `delay_s` holds each reply (a first text "slow" holds it twice as long)."""

    mode = "ok"
    script: list[str] = []
    bodies: list[dict] = []
    delay_s = 0.0
    in_flight = 0
    max_in_flight = 0
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls = type(self)
        with cls.lock:
            cls.bodies.append({**body, "auth": self.headers.get("Authorization")})
            mode = cls.script.pop(0) if cls.script else cls.mode
            cls.in_flight += 1
            cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        try:
            time.sleep(cls.delay_s * (2 if body["input"][0].startswith("slow") else 1))
            self._reply(body, mode)
        finally:
            with cls.lock:
                cls.in_flight -= 1

    def _reply(self, body: dict, mode: str) -> None:
        dim = 5 if mode == "dim5" else 6
        data = [{"object": "embedding", "index": i, "embedding": _vector(t, dim)}
                for i, t in enumerate(body["input"])]
        status, reply = 200, {"object": "list", "model": body["model"], "data": data[::-1]}
        headers = {"Content-Type": "application/json"}
        if mode == "500":
            status, reply = 500, {"error": {"message": "boom"}}
        elif mode == "503":
            status, reply = 503, {"error": {"message": "overloaded"}}
        elif mode == "429":
            status, reply = 429, {"error": {"message": "rate limited"}}
            headers["Retry-After"] = "7"
        elif mode == "400":
            status, reply = 400, {"error": {"message": "bad model"}}
        elif mode == "hang":
            time.sleep(1.0)  # past the client's timeout in the tests that use it
        elif mode == "short":
            reply["data"] = data[:-1]
        elif mode == "nan":
            reply = {"data": [{**d, "embedding": [float("nan")] * 6} for d in data]}
        raw = b"not json {" if mode == "garbage" else json.dumps(reply).encode()
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except OSError:  # the client gave up waiting (the timeout tests)
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Endpoint]]:
    handler = type("Handler", (_Endpoint,), {"mode": "ok", "bodies": [], "script": [],
                                             "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("TWIST_LLM_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
    monkeypatch.setenv("TWIST_LLM_API_KEY", "sk-test")
    for name in ("TWIST_EMBED_BASE_URL", "TWIST_EMBED_API_KEY", "TWIST_EMBED_TIMEOUT_S",
                 "TWIST_EMBED_CONCURRENCY", "TWIST_EMBED_RETRIES", "TWIST_EMBED_DIM"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


def _openai(sleeps: list[float] | None = None) -> embedders.OpenAIEmbedder:
    """openai:toy-embed made active, its backoff waits recorded in `sleeps` instead of slept."""
    chosen = dense.use_embedder("openai:toy-embed")
    assert isinstance(chosen, embedders.OpenAIEmbedder)
    chosen._sleep = (sleeps if sleeps is not None else []).append
    return chosen


def test_openai_embedder_batches_orders_by_index_and_goes_through_the_cache(
        fresh: Path, endpoint: type[_Endpoint]) -> None:
    chosen = _openai()
    chosen.batch_size = 2
    texts = [f"text {i}" for i in range(5)]
    got = dense.embed(texts)
    assert np.allclose(got, np.array([_vector(t) for t in texts], dtype=np.float32))
    sent = [b["input"] for b in endpoint.bodies]
    # no request just to learn the dimension: the first real batch tells it
    assert "dimension" not in str(sent) and chosen.dim == 6
    assert sorted(t for batch in sent for t in batch) == sorted(texts)
    assert all(len(batch) <= 2 for batch in sent) and len(sent) == 3
    assert {b["model"] for b in endpoint.bodies} == {"toy-embed"}
    # the endpoint's request size, not the retriever's ONNX batch of 16
    chosen.batch_size = 64
    endpoint.bodies.clear()
    dense.embed([f"more {i}" for i in range(40)], batch_size=16)
    assert [len(b["input"]) for b in endpoint.bodies] == [40]
    assert {b["auth"] for b in endpoint.bodies} == {"Bearer sk-test"}
    assert chosen.model_id().startswith("openai:toy-embed endpoint=http://127.0.0.1:")
    assert "sk-test" not in chosen.model_id() + repr(chosen)
    # a new process: the disk cache answers every text (its rows tell the dimension), and
    # nothing reaches the server
    endpoint.bodies.clear()
    dense._cache.clear()
    embcache._shared.clear()
    again = dense.use_embedder("openai:toy-embed")
    assert np.array_equal(dense.embed(texts), got)
    assert endpoint.bodies == [] and again.known_dim is None
    # half cached, half new: one request, for the new texts only
    assert np.allclose(dense.embed(texts + ["new one"])[-1], _vector("new one"))
    assert [b["input"] for b in endpoint.bodies] == [["new one"]]


@pytest.mark.parametrize("mode,message", [("500", "HTTP 500"), ("garbage", "malformed reply"),
                                          ("short", "malformed reply"),
                                          ("nan", "malformed reply"), ("400", "HTTP 400")])
def test_openai_failures_are_errors_never_zero_vectors(fresh: Path, endpoint: type[_Endpoint],
                                                       mode: str, message: str) -> None:
    chosen = _openai()
    endpoint.mode = mode
    with pytest.raises(embedders.EmbeddingError, match=message):
        dense.embed(["never embedded"])
    assert not dense._cache  # nothing stored
    cache = embcache.shared_cache(6)
    assert cache is not None and cache.get_many(chosen.model_id(), ["never embedded"]) == {}
    # a 5xx is tried again (OPENAI_RETRIES times); a 400 or a malformed reply is not
    assert len(endpoint.bodies) == (1 + embedders.OPENAI_RETRIES if mode == "500" else 1)


def test_openai_429_then_200_waits_as_retry_after_asks(fresh: Path,
                                                       endpoint: type[_Endpoint]) -> None:
    sleeps: list[float] = []
    _openai(sleeps)
    endpoint.script = ["429", "ok"]
    got = dense.embed(TEXTS)
    assert np.allclose(got, [_vector(t) for t in TEXTS])
    assert len(endpoint.bodies) == 2 and sleeps == [7.0]  # the server's Retry-After: 7


def test_openai_gives_up_after_its_retries_with_backoff(fresh: Path, endpoint: type[_Endpoint],
                                                        monkeypatch) -> None:
    monkeypatch.setenv("TWIST_EMBED_RETRIES", "2")
    sleeps: list[float] = []
    _openai(sleeps)
    endpoint.mode = "503"
    with pytest.raises(embedders.EmbeddingError,
                       match=r"HTTP 503 .*overloaded.* \(gave up after 3 attempts\)"):
        dense.embed(TEXTS)
    assert len(endpoint.bodies) == 3 and not dense._cache
    # exponential, jittered: 1 s then 2 s, each scaled by a factor in [0.5, 1]
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0


def test_openai_timeout_is_retried_then_an_error(fresh: Path, endpoint: type[_Endpoint],
                                                 monkeypatch) -> None:
    monkeypatch.setenv("TWIST_EMBED_TIMEOUT_S", "0.2")
    monkeypatch.setenv("TWIST_EMBED_RETRIES", "1")
    chosen = _openai()
    assert chosen.timeout_s == 0.2 and chosen.retries == 1
    endpoint.script = ["hang", "ok"]  # one timeout, then an answer
    assert np.allclose(dense.embed(["late"]), [_vector("late")])
    endpoint.mode = "hang"
    with pytest.raises(embedders.EmbeddingError,
                       match=r"no reply within 0.2 s \(TWIST_EMBED_TIMEOUT_S\) "
                             r"\(gave up after 2 attempts\)"):
        dense.embed(["never"])
    assert "never" not in dense._cache


def test_openai_reply_of_another_dimension_names_what_was_expected(
        fresh: Path, endpoint: type[_Endpoint], monkeypatch) -> None:
    _openai()
    endpoint.script = ["ok", "dim5"]
    dense.embed(["first"])  # 6 dimensions, learnt from this reply
    with pytest.raises(embedders.EmbeddingError,
                       match=r"malformed reply: vectors of 5 dimensions, expected 6 "
                             r"\(the endpoint's earlier replies\)"):
        dense.embed(["second"])
    endpoint.bodies.clear()
    monkeypatch.setenv("TWIST_EMBED_DIM", "6")  # configured: the very first reply is checked
    configured = _openai()
    assert configured.dim == 6 and endpoint.bodies == []  # no request to know it
    endpoint.script = ["dim5"]
    with pytest.raises(embedders.EmbeddingError,
                       match=r"vectors of 5 dimensions, expected 6 \(TWIST_EMBED_DIM\)"):
        dense.embed(["third"])
    endpoint.script = ["short"]
    with pytest.raises(embedders.EmbeddingError,
                       match="1 vectors for 2 texts, expected one per text"):
        dense.embed(["fourth", "fifth"])


def test_openai_batches_run_concurrently_and_keep_their_order(
        fresh: Path, endpoint: type[_Endpoint], monkeypatch) -> None:
    monkeypatch.setenv("TWIST_EMBED_CONCURRENCY", "3")
    chosen = _openai()
    chosen.batch_size = 2
    endpoint.delay_s = 0.2
    # the batch sent first is answered last ("slow..." holds its reply twice as long)
    texts = ["slow 0", "slow 1"] + [f"t {i:02d}" for i in range(10)]
    got = chosen.run(texts)
    assert np.allclose(got, [_vector(t) for t in texts])  # input order, not arrival order
    assert len(endpoint.bodies) == 6 and endpoint.max_in_flight == 3
    # dense.embed sends as many texts per call as the requests in flight can carry
    endpoint.bodies.clear()
    dense.embed([f"u {i:02d}" for i in range(12)])
    assert len(endpoint.bodies) == 6


@pytest.mark.parametrize("name,value", [("TWIST_EMBED_CONCURRENCY", "0"),
                                        ("TWIST_EMBED_TIMEOUT_S", "soon"),
                                        ("TWIST_EMBED_RETRIES", "-1"),
                                        ("TWIST_EMBED_DIM", "1.5"),
                                        ("TWIST_EMBED_TIMEOUT_S", "nan")])
def test_openai_settings_out_of_range_are_input_errors(fresh: Path, endpoint, monkeypatch,
                                                       name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InputError, match=name):
        dense.use_embedder("openai:toy-embed")


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert embedders.retry_after_s("7") == 7.0
    assert embedders.retry_after_s(None) is None and embedders.retry_after_s("soon") is None
    date = "Wed, 02 Dec 2026 05:00:30 GMT"
    now = 1_796_187_600.0  # 2026-12-02 05:00:00 UTC
    assert embedders.retry_after_s(date, now=now) == pytest.approx(30.0)
    assert embedders.retry_after_s(date, now=now + 60) == 0.0  # in the past: no wait


def test_openai_without_an_endpoint_is_an_input_error(fresh: Path, monkeypatch) -> None:
    for name in ("TWIST_EMBED_BASE_URL", "TWIST_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InputError, match="endpoint"):
        dense.use_embedder("openai:toy-embed")


def test_two_models_never_share_cache_entries(fresh: Path, endpoint: type[_Endpoint]) -> None:
    builtin = dense.embed(TEXTS)
    dense.use_embedder(f"onnx:{_model_dir(fresh)}")
    computed = dense.computed_texts
    copy = dense.embed(TEXTS)  # same weights, another model id: computed, not read
    assert dense.computed_texts == computed + len(TEXTS)
    assert np.allclose(copy, builtin, atol=1e-6)
    remote = dense.use_embedder("openai:toy-embed")
    assert np.allclose(dense.embed(TEXTS), [_vector(t) for t in TEXTS])
    ids = {dense.BUILTIN.model_id(), remote.model_id(), dense.model_id()}
    assert len(ids) == 2 and dense.model_id() == remote.model_id()
    cache = embcache.shared_cache(dense.DIM)
    assert cache is not None and len(cache) == 3 * len(TEXTS)  # one row per (model, text)
    rows = cache.get_many(dense.BUILTIN.model_id(), TEXTS)
    assert all(np.array_equal(rows[t], builtin[i]) for i, t in enumerate(TEXTS))
    remote_rows = embcache.shared_cache(6).get_many(remote.model_id(), TEXTS)
    assert set(remote_rows) == set(TEXTS)
    assert embcache.shared_cache(6).get_many(dense.BUILTIN.model_id(), TEXTS) == {}


def test_run_manifest_records_the_embedder_and_another_one_is_another_run(fresh: Path,
                                                                           capsys) -> None:
    folder = _model_dir(fresh)
    out = fresh / "runs"
    args = ["run", "-d", "demo", "-s", "flat-rag", "--no-progress", "-o", str(out)]
    assert run_cli(args + ["--embedder", f"onnx:{folder}"]) == 0
    manifest = json.loads((out / "flat-rag" / "manifest.json").read_text())
    assert manifest["embedder"] == manifest["config"]["embedder"] == dense.model_id()
    assert manifest["embedder"].startswith("onnx:minilm-copy model=")
    capsys.readouterr()
    # the built-in model in the same folder: another fingerprint, refused with the field named
    assert run_cli(args) == 2
    assert "field 'embedder'" in capsys.readouterr().err
    assert run_cli(args + ["--force-new"]) == 0
    manifest = json.loads((out / "flat-rag" / "manifest.json").read_text())
    assert manifest["embedder"] == dense.BUILTIN.model_id() and "embedder" not in manifest["config"]
