#!/usr/bin/env python3
"""The workspace's `rust-version` states what the build needs (docs/decisions.md, "The Rust
version").

`rust-version` in the root Cargo.toml is the oldest Rust the workspace builds with. Every member
inherits it (`rust-version.workspace = true`), so cargo refuses an older toolchain and clippy's
`incompatible_msrv` lint refuses a standard library item newer than it (in the test command's
clippy build). What neither sees is a locked dependency that needs a newer Rust than the number
says: this check reads every dependency's own `rust-version` (`cargo metadata`, the packages
built for this machine's target) and fails when one is newer than the workspace's, naming them.
It also fails when a member does not inherit the number. No build: about a second, once cargo
has the packages (the test command runs it after its build).

A build with exactly that toolchain is not part of it: only the machine's toolchain can be had
here (no other can be fetched); `cargo +<version> check --workspace --lib --locked` does it where
that toolchain is installed.

Usage: python3 infra/scripts/check-rust-version.py   (exit 1 and one line per finding)
"""
import json
import os
import subprocess
import sys
import tomllib

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def version(text):
    """`1.94.1` as (1, 94, 1); `1.94` as (1, 94, 0)."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        declared_text = tomllib.load(f)["workspace"]["package"]["rust-version"]
    declared = version(declared_text)
    host = next(
        line.split(": ", 1)[1]
        for line in subprocess.run(
            ["rustc", "-vV"], check=True, capture_output=True, text=True
        ).stdout.splitlines()
        if line.startswith("host: ")
    )
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--offline",
             "--filter-platform", host],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
    )
    members = set(metadata["workspace_members"])
    findings = []
    for package in metadata["packages"]:
        needs = package.get("rust_version")
        if package["id"] in members:
            if needs is None or version(needs) != declared:
                findings.append(
                    f"{package['manifest_path']}: rust-version {needs} is not the workspace's "
                    f"{declared_text} (add rust-version.workspace = true)"
                )
        elif needs is not None and version(needs) > declared:
            findings.append(
                f"{package['name']} {package['version']} needs Rust {needs}, newer than the "
                f"workspace's rust-version {declared_text}: raise it in Cargo.toml"
            )
    for finding in findings:
        print(finding)
    if findings:
        sys.exit(1)
    print(f"rust-version {declared_text}: every member inherits it, no dependency needs more")


if __name__ == "__main__":
    main()
