"""The field cipher: redacted values encrypted for the store, decrypted under any current key."""

from __future__ import annotations

import json

import pytest

from host.protocol.redaction import SEALED, FieldCipher

HIDDEN = frozenset({"pin"})


def test_hidden_fields_are_encrypted_and_come_back() -> None:
    cipher = FieldCipher(["key-one"])
    hidden = cipher.hide({"pin": "4321", "name": "ann"}, HIDDEN)
    assert hidden["name"] == "ann" and set(hidden["pin"]) == {SEALED}
    assert "4321" not in json.dumps(hidden)
    assert cipher.show(hidden) == {"pin": "4321", "name": "ann"}


def test_a_rotated_in_key_still_opens_what_the_old_one_sealed() -> None:
    hidden = FieldCipher(["old"]).hide({"pin": [1, 2]}, HIDDEN)
    assert FieldCipher(["new", "old"]).show(hidden) == {"pin": [1, 2]}
    with pytest.raises(ValueError, match="another key"):
        FieldCipher(["new"]).show(hidden)


def test_no_key_is_refused() -> None:
    with pytest.raises(ValueError):
        FieldCipher([])
