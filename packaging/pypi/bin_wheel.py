"""Writes the `toolpolicy-cli` wheel around a `policy` binary that is already
built, in the layout maturin's `bin` bindings give (the binary in the
wheel's `.data/scripts/`, so pip, pipx and uv put it on PATH).

scripts/package uses it for the binary `cargo test --release` built and
tested: maturin would build the binary again (its cargo build has not the
test build's features), another full release build of the gateway.
`packaging/pypi/toolpolicy-cli/pyproject.toml` stays the project's build
from source (maturin, `bindings = "bin"`).

    python3 packaging/pypi/bin_wheel.py BINARY VERSION PLATFORM_TAG OUT_DIR
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "toolpolicy-cli"


def metadata(version: str) -> str:
    """The core metadata, from the project's pyproject.toml."""
    import tomllib  # Python 3.11 and later, as scripts/package runs it

    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    readme = (PROJECT / project["readme"]).read_text()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {version}",
        f"Summary: {project['description']}",
        f"License: {project['license']['text']}",
        f"Keywords: {','.join(project['keywords'])}",
        f"Requires-Python: {project['requires-python']}",
        *(f"Classifier: {c}" for c in project["classifiers"]),
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ]
    return "\n".join(lines)


def linux_tag(binary: bytes, arch: str) -> str:
    """`manylinux_2_N_ARCH` for the newest glibc symbol version the binary needs."""
    minor = max((int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", binary)), default=17)
    return f"manylinux_2_{max(minor, 17)}_{arch}"


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    binary_path, version, tag, out = Path(argv[0]), argv[1], argv[2], Path(argv[3])
    binary = binary_path.read_bytes()
    if tag.startswith("linux_"):
        tag = linux_tag(binary, tag[len("linux_"):])
    name = f"toolpolicy_cli-{version}"
    exe = "policy.exe" if binary_path.suffix == ".exe" else "policy"
    files = {
        f"{name}.data/scripts/{exe}": binary,
        f"{name}.dist-info/METADATA": metadata(version).encode(),
        f"{name}.dist-info/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: toolpolicy bin_wheel.py\nRoot-Is-Purelib: false\nTag: py3-none-{tag}\n"
        ).encode(),
    }
    record = f"{name}.dist-info/RECORD"
    rows = [f"{path},{digest(data)},{len(data)}" for path, data in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(rows) + "\n").encode()
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{name}-py3-none-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if path.endswith(exe) else 0o644) << 16
            z.writestr(info, data)
    print(wheel.name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
