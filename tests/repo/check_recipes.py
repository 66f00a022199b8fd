#!/usr/bin/env python3
"""Offline checks of the package-manager recipes: the Conan recipe compiles (as python3 -m py_compile would, without writing bytecode),
the vcpkg manifest parses, and both carry the project version."""

import json
import pathlib
import re
import sys


def main():
    root, version = pathlib.Path(sys.argv[1]), sys.argv[2]
    failures = []

    conanfile = root / "conanfile.py"
    try:
        compile(conanfile.read_text(), str(conanfile), "exec")
    except SyntaxError as e:
        failures.append(f"conanfile.py does not compile: {e}")
    m = re.search(r'^\s*version\s*=\s*"([^"]+)"', conanfile.read_text(), re.M)
    if not m or m.group(1) != version:
        failures.append(f"conanfile.py version {m.group(1) if m else None} != project version {version}")

    manifest = root / "ports" / "ruvllm" / "vcpkg.json"
    try:
        port = json.loads(manifest.read_text())
        if port.get("version") != version:
            failures.append(f"vcpkg.json version {port.get('version')} != project version {version}")
        if port.get("name") != "ruvllm":
            failures.append(f"vcpkg.json name {port.get('name')} != ruvllm")
    except json.JSONDecodeError as e:
        failures.append(f"vcpkg.json does not parse: {e}")
    if not (root / "ports" / "ruvllm" / "portfile.cmake").is_file():
        failures.append("ports/ruvllm/portfile.cmake is missing")

    for f in failures:
        print(f, file=sys.stderr)
    if not failures:
        print(f"recipes carry version {version}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
