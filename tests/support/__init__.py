"""Test infrastructure shared by the whole suite: ACP schema validation and agent drivers."""
