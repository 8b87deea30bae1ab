"""Permission rules: ``[permissions] allow / ask / deny`` patterns, the rules a user saves for a
project or a session, and how a tool call is matched against them (docs/permissions.md).

``patterns`` parses one pattern and matches it, ``shell`` splits a command line into its simple
commands with a real shell parser, ``rules`` weighs every rule in force against a call
(deny, then ask, then allow), ``config`` reads the config file's table, ``store`` keeps a
project's rules under the state directory and ``book`` puts the three sources together for one
session. Nothing here decides by mode: ``tools/permissions.py`` does, after asking ``rules``.
"""
