"""Every section of the doctor's report, in order, and the command itself."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Mapping

from acp_agent import __version__, logs
from acp_agent.config_file import ConfigError, read_config_file
from acp_agent.doctor.config import config_section, loaded_providers
from acp_agent.doctor.journals import journals_section
from acp_agent.doctor.model import model_section
from acp_agent.doctor.options import DEFAULT_TIMEOUT_S
from acp_agent.doctor.report import Report, System, to_json, to_text
from acp_agent.doctor.sandbox import sandbox_section
from acp_agent.doctor.state import state_section
from acp_agent.journal.store_choice import choose_store
from acp_agent.options import Options


def diagnose(
    options: Options,
    args: argparse.Namespace,
    env: Mapping[str, str],
    *,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> Report:
    providers = loaded_providers(options.config)
    _choose_store(options)
    sections = [
        config_section(options.config, args.config, env),
        model_section(options.model, providers, env, timeout_s=timeout_s),
        state_section(options.state_dir, args.state_dir, env),
        journals_section(options.state_dir),
        sandbox_section(options.config),
    ]
    return Report.of(system(), sections)


def _choose_store(options: Options) -> None:
    """The journal store the server would use; a bad choice is the config section's to report
    (it reads the file too), so the journals section falls back to the state dir's files."""
    try:
        config = read_config_file(options.config)
        choose_store(options.state_dir, options.journal_store, config, options.config)
    except ConfigError:
        return


def system() -> System:
    python = platform.python_version()
    return System(__version__, python, sys.executable, platform.platform())


def run_doctor(args: argparse.Namespace, options: Options) -> int:
    logs.configure(options.log_level, options.log_file)
    try:
        timeout_s = None if args.offline else args.timeout
        report = diagnose(options, args, os.environ, timeout_s=timeout_s)
    finally:
        logs.shutdown()
    if args.json:
        sys.stdout.buffer.write(to_json(report))
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(to_text(report))
        sys.stdout.flush()
    return report.exit_code
