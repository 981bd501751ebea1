"""Hand-written explanations: every code exists, and every meaning agrees with the code's symbol."""
from __future__ import annotations

import re

import pytest

from ascend_compat.errors import codes
from ascend_compat.errors.explanations import EXPLANATIONS

# words of a symbol -> what an agreeing meaning says
SYNONYMS = {
    "OOM": ["memory"], "ALLOC": ["alloc", "memory"], "ALLOCATION": ["alloc", "memory"],
    "PARAM": ["parameter", "argument"], "DEVICEID": ["device id"], "NULL": ["empty", "null"],
    "NULLPTR": ["null"], "UNINITIALIZE": ["not initialised"], "OP": ["operator"], "MATCH": ["match"],
    "FOUND": ["not found", "find"], "UNSUPPORTED": ["not support", "unsupported"], "SUPPORT": ["support"],
    "TIMEOUT": ["timed out", "timeout"], "AICORE": ["ai core"], "AIVEC": ["vector"], "FLOW": ["overflow"],
    "OVER": ["overflow", "exceeded", "limit"], "FAILURE": ["error", "fail"], "NO": ["unavailable", "exhausted", "no "],
    "SOCKET": ["communication", "disconnected"], "INNER": ["internal"], "TS": ["task scheduler"],
}
GENERIC = {"ACL", "ERROR", "RT", "ERR", "ACLNN", "HCCL", "E", "GE", "NOT"}


def test_every_numeric_explanation_is_in_the_generated_table():
    for key in EXPLANATIONS:
        if key.startswith(("E", "ERR")):
            assert re.fullmatch(r"E[0-9A-Z]\d{4}|ERR\d{5}", key), key
            continue
        number = int(key.split(":", 1)[1]) if key.startswith("hccl:") else int(key)
        assert codes.lookup(number), f"explanation for {key} but the code is not in the generated table"
        if key.startswith("hccl:"):
            assert codes.family_of(number) == "hccl"


@pytest.mark.parametrize("key", [k for k in EXPLANATIONS if not k.startswith("E")])
def test_meaning_agrees_with_symbol(key):
    number = int(key.split(":")[-1])
    symbol = codes.lookup(number)[0].symbol
    words = [w for w in symbol.split("_") if w and w not in GENERIC]
    meaning = EXPLANATIONS[key].meaning.lower()
    hits = [w for w in words if w.lower() in meaning or any(s in meaning for s in SYNONYMS.get(w, []))]
    assert hits, f"{key} {symbol}: meaning {meaning!r} shares nothing with the symbol"


def test_107002_is_context_empty_not_device_in_use():
    m = EXPLANATIONS["107002"].meaning.lower()
    assert "context" in m and "empty" in m
    assert "in use" not in m and "busy" not in m


@pytest.mark.parametrize("code,words", [
    ("207004", ["device", "unavailable"]), ("207018", ["memory"]), ("507035", ["vector core", "exception"]),
    ("107001", ["device id"]), ("148049", ["ascend_opp_path"]), ("100039", ["stub"]),
    ("507048", ["timed out"]), ("561003", ["kernel"]),
])
def test_key_meanings(code, words):
    m = EXPLANATIONS[code].meaning.lower()
    assert all(w in m for w in words), (code, m)


def test_every_explanation_says_what_to_do():
    for key, e in EXPLANATIONS.items():
        assert e.meaning and e.fixes, key
