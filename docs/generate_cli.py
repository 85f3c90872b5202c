"""Write docs/cli.md from the commands' own --help: `python docs/generate_cli.py > docs/cli.md`.

tests/test_docs.py checks that docs/cli.md is what this prints, so the reference cannot drift.
"""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from simhash_store.cli import app

HEADER = """# Command-line reference

Generated from each command's `--help` by `python docs/generate_cli.py > docs/cli.md`
(a test checks that it is up to date). Every command also takes `--db URL` before or
after its name; without it, `SIMHASH_STORE_URL`, else the embedded server.
"""


def command_names() -> list[str]:
    group = typer.main.get_command(app)
    return list(group.commands)


def help_text(*arguments: str) -> str:
    result = CliRunner().invoke(app, [*arguments, "--help"], env={"COLUMNS": "100", "TERM": "dumb"})
    return result.output.rstrip()


def reference() -> str:
    parts = [HEADER, "```", help_text(), "```"]
    for name in command_names():
        parts += [f"\n## {name}\n", "```", help_text(name), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
