import pytest

from twistbench.datasets.keyfile import read_key, sha256_file, write_key
from twistbench.errors import InputError


def test_key_bytes_are_deterministic_and_hash_checked(tmp_path):
    a = write_key(tmp_path / "a.json", "k", "k-1", {"b": [1, 2], "a": "x"})
    b = write_key(tmp_path / "b.json", "k", "k-1", {"a": "x", "b": [1, 2]})
    assert a == b == sha256_file(tmp_path / "a.json")
    doc, digest = read_key(tmp_path / "a.json")
    assert doc["payload"] == {"a": "x", "b": [1, 2]} and digest == a


def test_tampered_key_is_refused(tmp_path):
    write_key(tmp_path / "a.json", "k", "k-1", {"a": 1})
    p = tmp_path / "a.json"
    p.write_text(p.read_text().replace('"a": 1', '"a": 2'))
    with pytest.raises(InputError, match="sha256"):
        read_key(p)


def test_not_a_key(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(InputError, match="format"):
        read_key(p)
    p.write_text("{oops")
    with pytest.raises(InputError, match="not valid JSON"):
        read_key(p)
