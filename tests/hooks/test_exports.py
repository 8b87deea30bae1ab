"""``acp_agent.hooks`` serves its names from their modules at first use (PEP 562,
``hooks/__init__.py``): each name of ``__all__`` is its module's very object, and an unknown one
is an ``AttributeError`` as for any module."""

from __future__ import annotations

import importlib

import pytest

import acp_agent.hooks as hooks


@pytest.mark.parametrize("name", hooks.__all__)
def test_each_name_is_its_modules_object(name: str) -> None:
    home = importlib.import_module(hooks._HOME[name])
    assert getattr(hooks, name) is getattr(home, name)


def test_all_names_every_export() -> None:
    assert sorted(hooks.__all__) == sorted(hooks._HOME)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        hooks.Nope  # noqa: B018
    assert not hasattr(hooks, "Nope")
