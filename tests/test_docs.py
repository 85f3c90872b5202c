"""The documentation matches the code: the CLI reference is regenerated from --help, and
the README stays short and links only to pages that exist."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _words(text: str) -> list[str]:
    return text.split()  # line wrapping may differ between Typer versions; the words may not


def test_cli_reference_is_generated_from_help():
    generator = runpy.run_path(str(REPO / "docs" / "generate_cli.py"))
    expected = generator["reference"]()
    written = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert _words(written) == _words(expected), "docs/cli.md is stale: python docs/generate_cli.py > docs/cli.md"
    for name in generator["command_names"]():
        assert f"\n## {name}\n" in written


def test_readme_is_short_and_its_links_resolve():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert links
    for link in links:
        if "://" in link:
            continue
        assert (REPO / link).exists(), f"README links to {link}, which does not exist"


def test_docs_links_resolve():
    for page in (REPO / "docs").glob("*.md"):
        for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in link:
                continue
            assert (page.parent / link).exists(), f"{page.name} links to {link}, which does not exist"


def _top_level_names(path: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_map_of_where_to_add_things_matches_the_code():
    # A reader follows this map to the file they must change: a renamed or moved file, or a
    # registration function that no longer exists, must fail here rather than mislead them.
    design = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    section = design.split("\n## Where to add things\n", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`([^`\s<>]+)`", section)
    paths = [name for name in named if "/" in name and ":" not in name]
    symbols = [name.split(":", 1) for name in named if ":" in name and "/" in name]
    assert len(paths) >= 10 and len(symbols) >= 8, "the section should name its files and registrations"
    for path in paths + [path for path, _ in symbols]:
        assert (REPO / path).exists(), f"docs/design.md, 'Where to add things', names {path}, which does not exist"
    for path, symbol in symbols:
        assert symbol in _top_level_names(REPO / path), (
            f"docs/design.md names {path}:{symbol}, which {path} does not define"
        )
    for room in (
        "tokenizer",
        "fingerprint scheme",
        "SQL function version",
        "CLI command",
        "input format",
        "output format",
    ):
        assert f"| a {room} " in section or f"| an {room} " in section, f"the map has no row for {room}"


def test_no_example_puts_a_token_on_a_command_line():
    """A command's arguments are readable by every local user (``ps``, /proc/PID/cmdline): a curl
    example with ``-H "Authorization: Bearer $TOKEN"`` gave the token to anyone watching. Shell
    examples send it on curl's standard input instead."""
    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if "curl" in line or line.lstrip().startswith(("-H", "--header")):
                assert not re.search(r"-H\s+['\"]?Authorization", line), f"{page.name}:{number}: {line}"


def _sql_examples(page: Path) -> list[list[tuple[str, str]]]:
    """The ```sql blocks of a page: each a list of (statement, the comment on its last line)."""
    blocks = []
    for block in re.findall(r"```sql\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
        statements: list[tuple[str, str]] = []
        pending: list[str] = []
        for line in block.splitlines():
            code, _, comment = line.partition("--")
            if code.strip():
                pending.append(code)
            if code.rstrip().endswith(";"):
                statements.append(("\n".join(pending), comment.strip()))
                pending = []
        blocks.append(statements)
    return blocks


def test_sql_examples_run_and_give_the_values_their_comments_show(database_url):
    """A reader pastes the SQL of README.md and docs/sql.md into psql: every statement runs on a
    new store, and a comment that shows a value (`-- 'a0138063aca2cebe'`, `-- 255: ...`) is what the
    statement before it returns."""
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    checked = 0
    try:
        for page in (REPO / "README.md", REPO / "docs" / "sql.md", REPO / "docs" / "dedup.md"):
            with engine.connect() as connection:  # each page on a new store, its blocks in order: rolled back
                for block in _sql_examples(page):
                    for statement, comment in block:
                        result = connection.execute(text(statement.replace(":", r"\:")))
                        rows = result.all() if result.returns_rows else []
                        shown = re.match(r"('[^']*'|-?\d+)(?=$|[:\s])", comment)
                        if shown and rows:
                            assert repr(rows[0][0]) == shown.group(1), (page.name, statement, rows)
                            checked += 1
                        elif shown:
                            raise AssertionError(f"{page.name}: {statement} returns no row, its comment shows one")
                connection.rollback()
    finally:
        engine.dispose()
    assert checked >= 3


def test_every_test_the_docs_name_exists():
    """A reader checks a claim in docs/reliability.md by running the test it names: each name must
    be a test (or a test module) of tests/, not one renamed or removed since."""
    defined = set()
    for path in (REPO / "tests").rglob("*.py"):
        defined.add(path.stem)
        defined.update(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), flags=re.M))
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        named = set(re.findall(r"\b(test_\w+)", page.read_text(encoding="utf-8")))
        assert named <= defined, f"{page.name} names tests that do not exist: {sorted(named - defined)}"
