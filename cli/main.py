"""The `kirin` command line: the one parser home, assembling each command group's parsers (one module a
group registers its parsers and handlers), and `main`, which runs the chosen command."""

from __future__ import annotations

import argparse
import sys

from . import blender_jobs, library, model_commands, pose_commands, serve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kirin", description="Kirin: animate any rigged creature.")
    sub = parser.add_subparsers(dest="command", required=True)
    blender_jobs.add_parsers(sub)
    data_sub = library.add_parsers(sub)
    serve.add_parsers(sub)
    # Subcommands that need torch import the models only when run.
    model_commands.add_parsers(sub, data_sub)
    pose_commands.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"kirin: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
