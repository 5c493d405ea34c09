"""The documentation holds together: every relative link leads to a file (and a heading
that exists), every page is reachable from docs/index.md, and the README stays a newcomer's page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: The README's sections, in order (issue 29: what it is, the commands, a short performance
#: summary with links; the measurements live in docs/performance.md).
README_SECTIONS = ["What it is", "The five commands", "Run a match from the shell", "Performance",
                   "Reliability, exit codes, layout", "Test"]


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {_anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_every_relative_link_leads_somewhere() -> None:
    broken = []
    for page in _pages():
        for target in _links(page):
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_every_page_is_reachable_from_the_index() -> None:
    linked = {(DOCS / target.partition("#")[0]).resolve() for target in _links(DOCS / "index.md")}
    missing = [page.name for page in DOCS.glob("*.md") if page.name != "index.md" and page.resolve() not in linked]
    assert not missing, f"not in docs/index.md: {missing}"


def test_the_readme_is_a_newcomers_page() -> None:
    text = (ROOT / "README.md").read_text()
    assert re.findall(r"(?m)^## (.+)$", text) == README_SECTIONS
    performance = text.split("\n## Performance\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in performance.splitlines() if line.startswith("| ") and not line.startswith("| What")]
    assert len(rows) == 6
    assert max(len(line) for line in text.splitlines()) < 400, "a README line (a table cell) is too long"
