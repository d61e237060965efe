#!/usr/bin/env python3
"""Records platform-specific optional packages that package-lock.json lacks.

npm writes a lock entry only for optional packages it could fetch metadata for. A registry
mirror that carries only this platform's build of a native package (as ours does) leaves the
other platforms' entries out, and `npm ci` then refuses the lock file as out of sync. Each
missing entry is added with the os/cpu/libc that its name encodes, so npm skips it on every
other platform without fetching it. Run after `npm install` changes dependencies.
"""
import json
import re
import sys
from pathlib import Path

PLATFORM = re.compile(
    r"-(android|darwin|freebsd|openbsd|netbsd|sunos|aix|linux|win32|wasm32|openharmony)-?"
    r"(arm64|arm|x64|ia32|ppc64|riscv64|s390x|wasi|loong64)?(?:-(gnueabihf|gnu|musleabihf|musl|msvc|eabi))?$"
)


def platform_fields(name: str):
    m = PLATFORM.search(name)
    if not m:
        return None
    os_, cpu, abi = m.groups()
    if os_ == "wasm32":
        return {"cpu": ["wasm32"]}
    fields = {"os": [os_], "cpu": [cpu or "x64"]}
    if os_ == "linux" and abi in ("gnu", "gnueabihf"):
        fields["libc"] = ["glibc"]
    if os_ == "linux" and abi in ("musl", "musleabihf"):
        fields["libc"] = ["musl"]
    return fields


def main() -> int:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "package-lock.json")
    lock = json.loads(path.read_text())
    packages = lock["packages"]
    added = 0
    for key, entry in list(packages.items()):
        for dep, version in (entry.get("optionalDependencies") or {}).items():
            parent = key + "/node_modules/" + dep
            top = "node_modules/" + dep
            if parent in packages or top in packages:
                continue
            fields = platform_fields(dep)
            if fields is None:
                continue
            packages[top] = {"version": version, "dev": bool(entry.get("dev")), "optional": True, **fields}
            added += 1
    lock["packages"] = dict(sorted(packages.items(), key=lambda kv: (kv[0] != "", kv[0])))
    path.write_text(json.dumps(lock, indent=2) + "\n")
    print(f"{path}: recorded {added} optional platform packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
