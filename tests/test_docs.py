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
