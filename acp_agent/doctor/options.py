"""The flags of ``acp-agent doctor`` beyond the server's; light, as ``cli.py`` imports it."""

from __future__ import annotations

import argparse

DEFAULT_TIMEOUT_S = 5.0


def add_doctor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("--offline", action="store_true", help="do not contact the model providers")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for each provider (default {DEFAULT_TIMEOUT_S:g})",
    )
