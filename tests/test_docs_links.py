"""The repository explains itself: every `*.md` that code, tests, suites or docs mention is a file
of the repository, and every relative Markdown link (and its #anchor) resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fedtest import REPO

# Where mentions are looked for: the package, its tools and tests, the suites, the docs.
SCANNED = ["README.md", "docs", "benchmark", "leaf_data", "tests", "benchmarks", "suites", "results/README.md", ".ci"]
SUFFIXES = {".py", ".md", ".yaml", ".j2", ".toml", ""}  # "" : .ci/run, a script without one

# Names fedbench writes (into results/<suite>/report/), mentioned as outputs, not as docs: each
# with the module that writes it, which must still name it.
WRITTEN_BY_FEDBENCH = {"report.md": "benchmark/report/outputs/documents.py"}


URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
MD_MENTION = re.compile(r"(?<![\w./-])([\w./-]*[\w-]\.md)\b")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def scanned_files() -> list[Path]:
    out = []
    for name in SCANNED:
        path = REPO / name
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        out += [p for p in files if p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return sorted(p for p in out if p != Path(__file__).resolve())  # this file names what it checks


def text(path: Path) -> str:
    return path.read_text(errors="replace")


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def in_repository(path: Path) -> bool:
    """An existing file or folder inside the checkout (a path climbing out of it does not count,
    even where the machine has one: a fresh clone would not)."""
    path = path.resolve()
    return path.exists() and REPO in path.parents


def resolves(mention: str, source: Path) -> bool:
    """A mention names a file beside the mentioning one, from the repository root, or in docs/
    (README's layout lists docs/'s files by their names)."""
    return any(in_repository(base / mention) for base in (source.parent, REPO, REPO / "docs"))


def dangling_mentions() -> set[tuple[str, str]]:
    found = set()
    for path in scanned_files():
        for mention in MD_MENTION.findall(URL.sub("", text(path))):
            if Path(mention).name in WRITTEN_BY_FEDBENCH or resolves(mention, path):
                continue
            found.add((rel(path), mention))
    return found


def github_anchors(markdown: str) -> set[str]:
    """The #anchors GitHub gives a file's headings (lower case, punctuation dropped, spaces to
    hyphens, a repeated heading numbered), code blocks left out."""
    anchors, seen, fenced = set(), {}, False
    for line in markdown.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def broken_links() -> list[str]:
    broken = []
    for path in (p for p in scanned_files() if p.suffix == ".md"):
        for target in MD_LINK.findall(path.read_text()):
            if URL.match(target) or target.startswith("mailto:"):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not in_repository(linked):
                broken.append(f"{rel(path)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in github_anchors(linked.read_text()):
                broken.append(f"{rel(path)}: {target} (no heading #{anchor} in {rel(linked)})")
    return broken


def test_every_mentioned_md_file_is_in_the_repository():
    dangling = dangling_mentions()
    assert not dangling, "mentioned but not in the repository: " + ", ".join(f"{f}: {m}" for f, m in sorted(dangling))


def test_nothing_points_outside_the_checkout():
    """Files beside the checkout (../shared, a machine's /work/shared) are not there in a fresh clone."""
    outside = re.compile(r"\.\./shared\b|/work/shared\b")
    found = [
        f"{rel(p)}:{n}"
        for p in scanned_files()
        for n, line in enumerate(text(p).splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []


def test_every_relative_markdown_link_resolves():
    assert broken_links() == []


@pytest.mark.parametrize("name,writer", sorted(WRITTEN_BY_FEDBENCH.items()))
def test_exempt_names_are_still_written_by_fedbench(name, writer):
    assert f'"{name}"' in (REPO / writer).read_text()


def test_the_manual_does_not_point_back_into_the_readme():
    """README.md is the landing page; the manual's content lives in docs/ (a reader of docs/ is never
    sent back to it for a section)."""
    back = re.compile(r"\(\.\./README\.md[#)]|\bthe README\b|\bREADME,", re.I)
    found = [
        f"{rel(p)}:{n}"
        for p in sorted((REPO / "docs").rglob("*.md"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if back.search(line)
    ]
    assert found == []


def test_the_scan_sees_what_it_checks():
    """Guards the regexes: a mention, a link and an anchor are found where they are known to be."""
    readme = REPO / "README.md"
    assert ("docs/design.md" in MD_MENTION.findall(readme.read_text())) and readme in scanned_files()
    assert "docs/design.md" in MD_LINK.findall(readme.read_text())
    assert {"splits-split", "job-statuses"} <= github_anchors((REPO / "docs" / "datasets.md").read_text()) | (
        github_anchors((REPO / "docs" / "runs.md").read_text())
    )
    assert MD_MENTION.findall(URL.sub("", "see ../shared/DESIGN.md, https://x.org/a/README.md")) == [
        "../shared/DESIGN.md"
    ]
    assert not resolves("../shared/DESIGN.md", readme) and resolves("docs/design.md", readme)
