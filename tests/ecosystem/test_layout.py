"""The ecosystem's two parts and the aliases that keep the first import paths working."""
from __future__ import annotations

import importlib

import pytest

from ascend_compat.ecosystem import _moved


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_old_path_is_the_moved_module(old):
    before = importlib.import_module(f"ascend_compat.ecosystem.{old}")
    after = importlib.import_module(_moved.MOVED[old])
    assert before is after
    assert after.__spec__.name == _moved.MOVED[old]  # the alias does not rename the module


def test_old_submodule_path_is_not_loaded_twice():
    old = importlib.import_module("ascend_compat.ecosystem.flash_attn.interface")
    new = importlib.import_module("ascend_compat.ecosystem.dropins.flash_attn.interface")
    assert old is new
    from ascend_compat.ecosystem.flash_attn import flash_attn_func
    assert flash_attn_func is new.flash_attn_func


def test_unknown_old_name_is_not_answered():
    assert _moved.new_name("ascend_compat.ecosystem.nothing_here") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ascend_compat.ecosystem.nothing_here")


def test_each_part_owns_its_patch_list():
    from ascend_compat.ecosystem import NAMES, dropins, integrations

    assert set(NAMES) == set(dropins.NAMES) | set(integrations.NAMES)
    assert not set(dropins.NAMES) & set(integrations.NAMES)
