#!/usr/bin/env python3
"""The repository stands alone: no tracked file refers to a path outside it.

A clone with nothing beside it must pass both README commands, so no tracked file may read,
link or name a file outside the repository. For every tracked text file, every relative path
that climbs (`../...`) is resolved against the file's own folder (Rust's `include_str!`,
Markdown links) or, on a Rust line that builds on `CARGO_MANIFEST_DIR` (that line or the three
before it), against the crate's folder; a path that lands outside the repository is reported
with its file and line. A line may carry the marker `self-contained: not a path` (a test's
path-traversal payload, for instance) to be skipped. Absolute paths into the
workplace (`/work/...`) and the names of the team's reference folder outside the repository
(`shared/spec`, `shared/BEHAVIOR.md`, `shared/DESIGN.md`, `shared/contracts`) are reported too.

Usage: python3 infra/scripts/check-self-contained.py   (exit 1 and one line per finding)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIMB = re.compile(r"(?:\.\./)+[A-Za-z0-9_.\-/{}]*")
OUTSIDE_NAMES = re.compile(
    r"(?:\.\./|/work/)shared/(?:spec|BEHAVIOR\.md|DESIGN\.md|contracts|hooks)"
    r"|/work/(?:main|shared|\.library|notes|wt-)"
)
SKIP_SUFFIXES = (".png", ".lock", ".pem")


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
    for path in tracked_files():
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
        print(f"{len(found)} reference(s) to paths outside the repository", file=sys.stderr)
        return 1
    print("self-contained: no tracked file refers to a path outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
