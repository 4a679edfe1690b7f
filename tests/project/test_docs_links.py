"""The docs point at what exists: every relative link in README.md and docs/ reaches its
file and heading, every entry of docs/decisions.md quoted by title in the code or the docs
(`docs/decisions.md, "Title"`) is there, and the design record stays within its budget."""

import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SOURCES = [p for d in ("stratus", "packers", "scalers", "traces", "pricing", "tests",
                       "benchmarks", "docs") for p in (ROOT / d).rglob("*")
           if p.suffix in (".py", ".md") and p not in (DECISIONS, Path(__file__).resolve())] + \
          [ROOT / n for n in ("README.md", "Makefile", "pyproject.toml")]
#: at most this many lines (issue 37): a record of decisions in force, not a log
BUDGET = 900


def _strip_code(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


@functools.cache
def anchors(text: str) -> set[str]:
    """GitHub's heading anchors (lower case, punctuation dropped, spaces to dashes, repeats
    numbered) and explicit ``<a id>`` ones."""
    seen: dict[str, int] = {}
    out = set(re.findall(r'<a id="([^"]+)"', text))
    for title in re.findall(r"^#+\s+(.*?)\s*$", _strip_code(text), re.M):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return out


def broken_links(page: Path, text: str) -> list[str]:
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _strip_code(text)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or (anchor and dest.suffix == ".md"
                                 and anchor not in anchors(dest.read_text())):
            bad.append(target)
    return bad


def quoted_entries(text: str) -> list[str]:
    """Titles quoted after ``decisions.md``, line breaks and comment markers joined."""
    flat = re.sub(r"\s*\n\s*(?:#+\s+|\*\s+)?", " ", text)
    return [q.strip() for q in re.findall(
        r"decisions\.md`?[,:]?\s*\(?\s*[\"“]([^\"”]{2,120})[\"”]", flat)]


def missing_entries(quotes: list[str], record: str) -> list[str]:
    titles = re.findall(r"^#{2,3} (.*)$", record, re.M)
    phrases = re.findall(r"\*\*([^*]+)\*\*", record)
    return [q for q in quotes if not any(q in t for t in titles)
            and not any(p.startswith(q) for p in phrases)]


def test_links_in_readme_and_docs_resolve():
    bad = {str(p.relative_to(ROOT)): b for p in PAGES if (b := broken_links(p, p.read_text()))}
    assert not bad, f"links to missing files or headings: {bad}"


def test_quoted_decisions_exist():
    record = DECISIONS.read_text()
    texts = {p: p.read_text(errors="replace") for p in SOURCES if p.is_file()}
    bad = {str(p.relative_to(ROOT)): m for p, t in texts.items() if "decisions.md" in t
           and (m := missing_entries(quoted_entries(t), record))}
    assert not bad, f"quoted docs/decisions.md entries that are not there: {bad}"


def test_decisions_within_budget():
    n = len(DECISIONS.read_text().splitlines())
    assert n < BUDGET, f"docs/decisions.md has {n} lines (budget {BUDGET}): merge or remove"


def test_the_checks_can_fail(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# A title, here\n[ok](#a-title-here) [gone](b.md) [no](#nowhere)\n")
    assert broken_links(page, page.read_text()) == ["b.md", "#nowhere"]
    record = "### Reusable objects\n**The GPU normaliser** (§3.3)\n"
    text = 'see docs/decisions.md,\n# "Reusable objects" and decisions.md ("The GPU normaliser"), ' \
           'decisions.md, "Stall guard"'
    assert quoted_entries(text) == ["Reusable objects", "The GPU normaliser", "Stall guard"]
    assert missing_entries(quoted_entries(text), record) == ["Stall guard"]
