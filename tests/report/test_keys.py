"""report/keys.py: one key version per table, named in the refusal."""

from __future__ import annotations

import pytest

from twistbench.errors import InputError
from twistbench.report.keys import KeyRef, require_one_key


def test_one_key_passes_and_two_are_refused_with_both_versions():
    a = KeyRef("runs/a", "twist-cs-2.0", "1" * 64)
    assert require_one_key([a, KeyRef("runs/b", "twist-cs-2.0", "1" * 64)]) == a
    with pytest.raises(InputError) as ei:
        require_one_key([a, KeyRef("runs/c", "twist-cs-2.0+errata-1", "2" * 64)])
    msg = str(ei.value)
    assert msg.startswith("runs/c: ") and "twist-cs-2.0+errata-1" in msg
    assert "runs/a is on key twist-cs-2.0" in msg and "not put side by side" in msg
    with pytest.raises(InputError, match="no runs"):
        require_one_key([])
