import json

import pytest

from twistbench.errors import InputError
from twistbench.records import ItemRecord, iter_records
from twistbench.runs.folder import REDACTED, Redactor, RunFolder


def rec(i):
    return ItemRecord(item_id=f"B:x{i}", track="B", kind="draft", conversation="c", input_hash="h",
                      output={"n": i})


def test_append_and_read_back(tmp_path):
    f = RunFolder(tmp_path)
    for i in range(3):
        f.append(rec(i))
    assert [r.item_id for r in f.records()] == ["B:x0", "B:x1", "B:x2"]


def test_torn_tail_is_cut_and_the_rest_kept(tmp_path):
    f = RunFolder(tmp_path)
    f.append(rec(0))
    f.append(rec(1))
    with open(f.items_path, "ab") as fh:
        fh.write(b'{"item_id": "B:x2", "tra')  # a kill in the middle of a write
    assert [r.item_id for r in f.records()] == ["B:x0", "B:x1"]
    removed = f.repair_tail()
    assert removed == len(b'{"item_id": "B:x2", "tra')
    assert f.items_path.read_bytes().endswith(b"\n")
    f.append(rec(2))
    assert [r.item_id for r in f.records()] == ["B:x0", "B:x1", "B:x2"]


def test_a_bad_line_in_the_middle_names_file_and_line(tmp_path):
    f = RunFolder(tmp_path)
    f.append(rec(0))
    with open(f.items_path, "a") as fh:
        fh.write("not json\n")
    f.append(rec(2))
    with pytest.raises(InputError) as info:
        list(iter_records(f.items_path))
    assert "line 2" in str(info.value) and str(f.items_path) in str(info.value)


def test_a_record_with_a_wrong_field_names_the_field(tmp_path):
    p = tmp_path / "items.jsonl"
    p.write_text(json.dumps({"item_id": "x", "track": "B", "kind": "k", "conversation": "c",
                             "input_hash": "h", "latency_s": "slow"}) + "\n")
    with pytest.raises(InputError) as info:
        list(iter_records(p))
    assert "latency_s" in str(info.value) and "line 1" in str(info.value)


def test_redactor_scrubs_by_name_and_by_value():
    r = Redactor({"api_key": "sk-live-123456", "model": "gpt"}, {"OPENAI_API_KEY": "sk-env-999999",
                                                                "HOME": "/root"})
    cfg = r.config({"api_key": "sk-live-123456", "nested": {"token": "abc",
                                                            "url": "x?k=sk-env-999999"},
                    "model": "gpt"})
    assert cfg["api_key"] == REDACTED and cfg["nested"]["token"] == REDACTED
    assert "sk-env-999999" not in json.dumps(cfg) and cfg["model"] == "gpt"
    assert r.text("echo sk-live-123456 and sk-env-999999") == f"echo {REDACTED} and {REDACTED}"


def test_a_short_write_is_continued_until_the_line_is_whole(tmp_path, monkeypatch):
    import os

    real = os.write
    sizes = []

    def short(fd, data):  # the kernel may write fewer bytes than asked (signals, quotas)
        n = real(fd, bytes(data[:7]))
        sizes.append(n)
        return n

    f = RunFolder(tmp_path)
    monkeypatch.setattr("twistbench.runs.folder.os.write", short)
    f.append(rec(0))
    f.append(rec(1))
    monkeypatch.undo()
    assert len(sizes) > 2 and [r.item_id for r in f.records()] == ["B:x0", "B:x1"]


def test_a_write_that_makes_no_progress_fails_loudly(tmp_path, monkeypatch):
    f = RunFolder(tmp_path)
    monkeypatch.setattr("twistbench.runs.folder.os.write", lambda fd, data: 0)
    with pytest.raises(OSError, match="no progress"):
        f.append(rec(0))


def test_duplicate_item_ids_are_refused_naming_them(tmp_path):
    f = RunFolder(tmp_path)
    f.append(rec(0))
    f.append(rec(1))
    f.append(rec(0))
    with pytest.raises(InputError) as info:
        f.records()
    assert "B:x0" in str(info.value) and "records 1, 3" in str(info.value)


SECRET = 'Zq"9\\xK!pW7-é~secret'  # a quote, a backslash and non-ASCII: every escaping differs


@pytest.mark.parametrize("form", [
    SECRET, json.dumps(SECRET)[1:-1], json.dumps(SECRET, ensure_ascii=False)[1:-1],
    json.dumps(json.dumps(SECRET))[1:-1], repr(SECRET)[1:-1],
    __import__("urllib.parse").parse.quote(SECRET, safe=""),
    __import__("urllib.parse").parse.quote_plus(SECRET)])
def test_every_form_of_a_secret_is_redacted(form):
    out = Redactor({"api_key": SECRET}, {}).text(f"before {form} after")
    assert "pW7" not in out and REDACTED in out and out.startswith("before ")


def test_url_credentials_are_redacted_in_any_text_and_their_password_everywhere():
    r = Redactor({"endpoint": "https://bob:hunter2-pw@api.example.com/v1"}, {})
    assert r.text("GET https://bob:hunter2-pw@api.example.com/v1/x") == \
        f"GET https://{REDACTED}@api.example.com/v1/x"
    assert "hunter2-pw" not in r.text("password was hunter2-pw")
    assert r.text("see ftp://u:p@h/") == f"see ftp://{REDACTED}@h/"  # not an option: still


def test_a_bare_token_and_a_percent_encoded_password_in_a_url_are_redacted():
    r = Redactor({"endpoint": "https://ghp_TOKEN12345@api.example.com/v1"}, {})
    assert r.text("token ghp_TOKEN12345 echoed") == f"token {REDACTED} echoed"
    assert r.text("GET https://ghp_TOKEN12345@api.example.com/") == \
        f"GET https://{REDACTED}@api.example.com/"
    r = Redactor({"endpoint": "https://bob:p%40ss%2Fw0rd@h.example/"}, {})
    assert "p@ss/w0rd" not in r.text("typed p@ss/w0rd") and "p%40ss" not in r.text("p%40ss%2Fw0rd")


def test_a_switch_under_a_secret_name_is_not_a_secret():
    r = Redactor({"use_auth": "true", "auth_token": "tok-ABCDEFGH"}, {})
    assert r.text("cache=true tok-ABCDEFGH") == f"cache=true {REDACTED}"


def test_the_working_directory_is_not_a_secret(tmp_path):
    # PWD's name holds the word "pwd"; redacting it hid every relative path in error lines.
    r = Redactor({}, {"PWD": str(tmp_path), "OLDPWD": str(tmp_path), "DB_PWD": "hunter2-db"})
    assert r.text(f"error: {tmp_path}/key.json: line 3") == f"error: {tmp_path}/key.json: line 3"
    assert "hunter2-db" not in r.text("pw hunter2-db")


def test_a_message_is_redacted_before_it_is_cut():
    r = Redactor({"token": "tok-ABCDEFGHIJ"}, {})
    cut = r.cut("x" * 95 + "tok-ABCDEFGHIJ", 100)
    assert "tok-" not in cut and "ABC" not in cut
    assert r.cut("x" * 95 + "tok-A", 100) == "x" * 95 + REDACTED  # a prefix already cut


@pytest.mark.parametrize("name, secret", [
    ("api_key", True), ("OPENAI_API_KEY", True), ("apiKey", True), ("access-token", True),
    ("clientSecret", True), ("password", True), ("DB_PASSWD", True), ("ssh_key", True),
    ("Authorization", True), ("tokenizers", False), ("max_tokens", False), ("key_path", False),
    ("monkey", False), ("keyboard_layout", False), ("top_k", False), ("TOKENIZERS_PARALLELISM",
                                                                      False),
    ("ACCESS_TOKENS", True), ("client_secrets", True), ("passwords", True), ("num_tokens", False)])
def test_secret_names_are_whole_words(name, secret):
    from twistbench.sanitize import is_secret_name

    assert is_secret_name(name) is secret


def test_the_manifest_package_list_is_not_redacted(tmp_path):
    f = RunFolder(tmp_path, Redactor({}, {"TOKENIZERS_PARALLELISM": "false-ish-value"}))
    f.write_manifest({"schema_version": "x", "dataset": {}, "system": {}, "fingerprint": "f",
                      "packages": {"tokenizers": "0.19.1"}, "max_tokens": 512})
    man = json.loads(f.manifest_path.read_text())
    assert man["packages"] == {"tokenizers": "0.19.1"} and man["max_tokens"] == 512
