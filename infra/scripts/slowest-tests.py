#!/usr/bin/env python3
"""Prints the slowest tests of a cargo-nextest run, from its JUnit report.

    python3 infra/scripts/slowest-tests.py [target/nextest/default/junit.xml] [count]

The report is the one `.config/nextest.toml` asks nextest to write; each <testcase> carries the
test binary (classname), the test's name and its wall time in seconds. The test command
(infra/scripts/test.sh) prints the ten slowest at its end.
"""
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "target/nextest/default/junit.xml"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    cases = [
        (float(case.get("time", "0")), case.get("classname", ""), case.get("name", ""))
        for case in ElementTree.parse(path).getroot().iter("testcase")
    ]
    cases.sort(reverse=True)
    print(f"slowest {min(count, len(cases))} of {len(cases)} tests (wall seconds, binary, test):")
    for seconds, binary, name in cases[:count]:
        print(f"  {seconds:8.1f}  {binary}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
