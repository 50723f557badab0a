#!/usr/bin/env python3
"""Every library or binary target that builds no test harness holds no test.

A target marked `test = false` in its Cargo.toml is not compiled a second time as a test
harness by `cargo test`, `cargo nextest` or `cargo build --all-targets`: a whole compilation and
link saved for each target that has no unit test (the function crates, their binaries, the
local server's and the provisioning tool's). The price is that a test written there later would
never be compiled nor run, and nothing would say so. This check says so: for every lib or bin
target with `test = false` it reads the target's source files and fails on a test attribute
(`#[test]`, `#[tokio::test]`, `#[cfg(test)]`, `proptest!`), naming the file and line; the fix is
to remove `test = false` from that target.

The files of a target: a binary's own file (and its folder when it is `src/bin/<name>/main.rs`);
a library's folder, without the files that are other targets' roots and without `src/bin/`.

Usage: python3 infra/scripts/check-test-targets.py   (exit 1 and one line per finding)
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEST_MARK = re.compile(r"#\[(?:[A-Za-z_:]*::)?test\b|#\[cfg\([^\]]*\btest\b|\bproptest!")


def rust_files(folder, skip):
    for here, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if os.path.join(here, d) not in skip]
        for name in files:
            path = os.path.join(here, name)
            if name.endswith(".rs") and path not in skip:
                yield path


def target_files(package, target):
    root = target["src_path"]
    if "lib" not in target["kind"]:
        if os.path.basename(root) == "main.rs" and os.path.basename(os.path.dirname(root)) != "src":
            return list(rust_files(os.path.dirname(root), set()))
        return [root]
    others = {t["src_path"] for t in package["targets"] if t is not target}
    folder = os.path.dirname(root)
    return list(rust_files(folder, others | {os.path.join(folder, "bin")}))


def main():
    metadata = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"], cwd=ROOT
        )
    )
    findings = []
    checked = 0
    for package in metadata["packages"]:
        for target in package["targets"]:
            if target.get("test", True) or not {"lib", "bin"} & set(target["kind"]):
                continue
            checked += 1
            for path in target_files(package, target):
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        if TEST_MARK.search(line):
                            findings.append(
                                f"{os.path.relpath(path, ROOT)}:{number}: a test in "
                                f"{package['name']}'s target `{target['name']}`, which has "
                                f"`test = false`: it would never run (remove `test = false`)"
                            )
    for finding in findings:
        print(finding)
    if findings:
        return 1
    print(f"{checked} targets without a test harness, none holding a test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
