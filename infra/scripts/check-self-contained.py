#!/usr/bin/env python3
"""The repository stands alone: no tracked file refers to a path, a document or a tracker
outside it.

A clone with nothing beside it must pass both README commands, so no tracked file may read,
link or name a file outside the repository. For every tracked text file, every relative path
that climbs (`../...`) is resolved against the file's own folder (Rust's `include_str!`,
Markdown links) or, on a Rust line that builds on `CARGO_MANIFEST_DIR` (that line or the three
before it), against the crate's folder; a path that lands outside the repository is reported
with its file and line. A line may carry the marker `self-contained: not a path` (a test's
path-traversal payload, for instance) to be skipped. Absolute paths into the
workplace (`/work/...`) and the names of the team's reference folder outside the repository
(`shared/spec`, `shared/contracts`, any `shared/<UPPERCASE>.md`) are reported too.

A reader has the repository and nothing else, so two more kinds of reference are reported: a
document that no tracked file is, named by its upper-case Markdown file name (`NOTES.md`, say)
or cited by its name and a section title (`NOTES "Some section"`, for `NOTES.md`), and a
tracker's issue number (the word "issue" or "issues" followed by a number, with or without `#`
or `-`): the rule it stands for is written where it applies (BEHAVIOR n of `docs/behavior.md`,
a `docs/decisions.md` or `docs/design.md` section). `docs/performance.md` keeps its history of
measurements, whose headings may name the issue that asked for them.

Usage: python3 infra/scripts/check-self-contained.py   (exit 1 and one line per finding)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIMB = re.compile(r"(?:\.\./)+[A-Za-z0-9_.\-/{}]*")
OUTSIDE_NAMES = re.compile(
    r"(?:\.\./|/work/)shared/(?:spec|contracts|hooks|[A-Z][A-Z_]*\.md)"
    r"|/work/(?:main|shared|\.library|notes|wt-)"
)
SKIP_SUFFIXES = (".png", ".lock", ".pem")
TRACKER = re.compile(r"\b[Ii]ssues? #?[0-9]+|\b[Ii]ssue[-_#][0-9]+")
TRACKER_HISTORY = ("docs/performance.md",)
UPPER_DOC = re.compile(r"\b([A-Z][A-Z0-9_]*\.md)\b")
CITED_DOC = re.compile(r'\b([A-Z]{4,}) "[A-Z][a-z]')


def tracked_files():
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    return [f for f in out.decode().split("\0") if f]


def crate_dir(path):
    """The folder of the nearest Cargo.toml above `path` (None outside a crate)."""
    folder = os.path.dirname(os.path.join(ROOT, path))
    while folder.startswith(ROOT) and folder != ROOT:
        if os.path.exists(os.path.join(folder, "Cargo.toml")):
            return folder
        folder = os.path.dirname(folder)
    return None


def escapes(base, relative):
    target = os.path.normpath(os.path.join(base, relative))
    return not (target == ROOT or target.startswith(ROOT + os.sep))


def findings():
    files = tracked_files()
    names = {os.path.basename(f) for f in files}
    for path in files:
        if path.endswith(SKIP_SUFFIXES) or path == os.path.relpath(__file__, ROOT):
            continue
        try:
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        own_folder = os.path.dirname(os.path.join(ROOT, path))
        crate = crate_dir(path) if path.endswith(".rs") else None
        for number, line in enumerate(lines, 1):
            if "self-contained: not a path" in line:
                continue
            if OUTSIDE_NAMES.search(line):
                yield f"{path}:{number}: names a path outside the repository: {line.strip()}"
                continue
            if path not in TRACKER_HISTORY and TRACKER.search(line):
                yield f"{path}:{number}: cites a tracker issue: {line.strip()}"
            cited = [f"{name}.md" for name in CITED_DOC.findall(line)]
            for document in UPPER_DOC.findall(line) + cited:
                if document not in names:
                    yield f"{path}:{number}: names {document}, which the repository does not hold"
            context = "\n".join(lines[max(0, number - 4) : number])
            base = crate if crate and "CARGO_MANIFEST_DIR" in context else own_folder
            for match in CLIMB.finditer(line):
                relative = match.group(0)
                if escapes(base, relative):
                    yield f"{path}:{number}: {relative} leads outside the repository"


def main():
    found = list(findings())
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} reference(s) to things outside the repository", file=sys.stderr)
        return 1
    print("self-contained: nothing tracked refers to a path, document or tracker outside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
