#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md's module map says what Package.swift does.

For every library target in the map's "Libraries" table, the "may import" column must name
exactly the target's dependencies in Package.swift (other targets by name, packages by their
products), and two layering promises are checked on the transitive closure: SecureKeys links
no keychain or SQLite, and NoiseProtocol links nothing but swift-crypto. Exit status 1, with the
differences, when they disagree."""

import json
import re
import subprocess
import sys

# A package named in the map stands for the products of it that targets use.
PACKAGE_PRODUCTS = {
    "swift-crypto": {"Crypto", "CryptoExtras"},
    "swift-asn1": {"SwiftASN1"},
    "postgres-nio": {"PostgresNIO"},
}


def documented(markdown):
    """Target name -> the set of names its "may import" cell allows."""
    table = markdown.split("## Libraries", 1)[1]
    rows = {}
    for line in table.splitlines():
        match = re.match(r"\| `([A-Za-z]+)` \| [^|]* \| ([^|]*) \|", line)
        if not match:
            if rows and not line.startswith("|"):
                break
            continue
        names = set()
        for item in match.group(2).split(","):
            item = re.sub(r"\(.*?\)", "", item).strip()
            for name in item.split("/"):
                name = name.strip()
                names |= PACKAGE_PRODUCTS.get(name, {name})
        rows[match.group(1)] = names
    return rows


def declared():
    """Target name -> the set of its direct dependencies' names, from `swift package dump-package`."""
    package = json.loads(subprocess.run(["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout)
    return {
        target["name"]: {list(dependency.values())[0][0] for dependency in target["dependencies"]}
        for target in package["targets"]
    }


def closure(graph, start):
    seen, stack = set(), [start]
    while stack:
        for name in graph.get(stack.pop(), ()):
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return seen


def main():
    with open("docs/ARCHITECTURE.md", encoding="utf-8") as handle:
        doc = documented(handle.read())
    graph = declared()
    problems = []
    if not doc:
        problems.append("docs/ARCHITECTURE.md: no Libraries table found")
    for target, allowed in sorted(doc.items()):
        if target not in graph:
            problems.append(f"{target}: in the map but not in Package.swift")
            continue
        if graph[target] != allowed:
            problems.append(
                f"{target}: Package.swift has {sorted(graph[target] - allowed)} the map does not name, "
                f"the map names {sorted(allowed - graph[target])} Package.swift does not have")
    libraries = {name for name, deps in graph.items() if name[0].isupper() and not name.endswith("Tests")}
    for target in sorted(libraries - doc.keys() - {"CSQLite", "CDNSServiceShim", "CLinuxExtras", "CZlib", "SFTestSupport"}):
        problems.append(f"{target}: a target of Package.swift missing from the map")
    for forbidden in ("SecureKeychain", "SQLiteSupport", "CSQLite"):
        if forbidden in closure(graph, "SecureKeys"):
            problems.append(f"SecureKeys links {forbidden}: key parsing must not need the keychain or SQLite")
    if closure(graph, "NoiseProtocol") - {"Crypto", "CryptoExtras"}:
        problems.append(f"NoiseProtocol links more than swift-crypto: {sorted(closure(graph, 'NoiseProtocol'))}")
    for problem in problems:
        print(f"module map: {problem}", file=sys.stderr)
    if not problems:
        print(f"module map: {len(doc)} library targets agree with Package.swift")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
