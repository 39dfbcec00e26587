"""What checking an unchanged watched source costs (core/indexing/watching.py): --pdfs addresses of small
text PDFs on a loopback HTTP server, plus one folder of as many other PDFs, watched in the shared
collection of a local-backend index in a temporary folder (no PostgreSQL).

The server (aiohttp, in a thread of its own) gives each PDF an ETag and a Last-Modified date, answers 304
to an If-None-Match or If-Modified-Since that still holds, and counts the requests for each path. Each
source is added as `pixelrag sources add` adds it (core.new_source + queue.add_source) and checked as a
worker checks it (core.indexing.watching.check inside `async with Service(settings)`). A first check of
every source indexes them (timed, but not what the target is about); then --rounds rounds check every
source again with nothing changed, each check timed (wall clock, and the process's CPU time, which
includes the server thread's share of a 304) with the requests it made counted. An audit hook counts the
files opened under the PDFs' folders meanwhile: an unchanged check should read none.

    python eval/bench_sources.py [--pdfs 20] [--rounds 5] [--json]

Target: an unchanged source's check makes one request and takes under 50 ms of work per PDF (an
address's check p95; a folder's check p95 / its PDF count).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path

import pymupdf
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import Service, Settings, job_queue, new_source, schedule_seconds  # noqa: E402
from core.indexing.watching import check  # noqa: E402
from core.records import SHARED_SCOPE  # noqa: E402

TARGET_MS = 50.0


def make_pdfs(folder: Path, count: int, name: str) -> list[Path]:
    """`count` one-page text PDFs, each with text of its own (no two are the same document)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n in range(1, count + 1):
        doc = pymupdf.open()
        page = doc.new_page()
        body = (
            f"{name} datasheet {n}: the {name.upper()}-{n} sensor reads {n * 3} to {n * 7} bar, "
            f"answers at I2C address 0x{0x40 + n:02x} and draws {n + 2} mA at 3.3 V."
        )
        page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), body, fontsize=11)
        path = folder / f"{name}-{n:02d}.pdf"
        doc.save(path)
        doc.close()
        out.append(path)
    return out


class PdfSite:
    """The PDFs of a folder at http://127.0.0.1:PORT/<name>.pdf, with ETag and Last-Modified, answering
    304 when the validators sent still hold; every request counted by path and status."""

    def __init__(self, pdfs: list[Path]):
        self.files = {}
        for pdf in pdfs:
            data = pdf.read_bytes()
            etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
            self.files[f"/{pdf.name}"] = (data, etag, formatdate(int(pdf.stat().st_mtime), usegmt=True))
        self.requests: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="pdf-site", daemon=True)

    def url(self, pdf: Path) -> str:
        return f"http://127.0.0.1:{self.port}/{pdf.name}"

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests[request.path] += 1
        found = self.files.get(request.path)
        if found is None:
            self.statuses[404] += 1
            return web.Response(status=404, text="no such PDF")
        data, etag, modified = found
        headers = {"ETag": etag, "Last-Modified": modified}
        asked_etag, asked_since = request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since")
        if asked_etag is not None:
            unchanged = etag in (e.strip() for e in asked_etag.split(",")) or asked_etag.strip() == "*"
        elif asked_since is not None:
            try:
                unchanged = parsedate_to_datetime(asked_since) >= parsedate_to_datetime(modified)
            except (TypeError, ValueError):
                unchanged = False
        else:
            unchanged = False
        status = 304 if unchanged else 200
        self.statuses[status] += 1
        if unchanged:
            return web.Response(status=304, headers=headers)
        return web.Response(body=data, content_type="application/pdf", headers=headers)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/{name}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def __enter__(self) -> PdfSite:
        self._thread.start()
        if not self._ready.wait(30):
            raise SystemExit("the loopback PDF server did not start")
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)


class OpenedFiles:
    """Files opened under `folders` while `counting` (a sys audit hook: it sees open() and os.open())."""

    def __init__(self, folders: list[Path]):
        self.prefixes = tuple(str(f.resolve()) + "/" for f in folders)
        self.counting = False
        self.opened: Counter[str] = Counter()
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if self.counting and event == "open" and isinstance(args[0], str | bytes | Path):
            path = str(Path(args[0].decode() if isinstance(args[0], bytes) else args[0]).resolve())
            if path.startswith(self.prefixes):
                self.opened[path] += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def timed_check(service: Service, queue, source_id: str) -> tuple[str, float, float]:
    """(the check's result line, wall ms, process CPU ms)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = await check(service, queue, source_id)
    return result, (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


async def bench(count: int, rounds: int, work: Path) -> dict:
    served = make_pdfs(work / "served", count, "served")
    make_pdfs(work / "watched", count, "folder")
    opened = OpenedFiles([work / "served", work / "watched"])
    # Loopback addresses are refused to chat users unless private URLs are allowed (PIXELRAG_ALLOW_PRIVATE_URLS).
    settings = Settings(index_dir=work / "index", backend="local", allow_private_urls=True)
    with PdfSite(served) as site:
        queue = await job_queue(settings).open()
        try:
            every = schedule_seconds("1h")
            addresses = [new_source(site.url(pdf), SHARED_SCOPE, every) for pdf in served]
            folder = new_source(str(work / "watched"), SHARED_SCOPE, every)
            for source in [*addresses, folder]:
                if not await queue.add_source(source):
                    raise SystemExit(f"{source.location} was watched already")
            path_of = {s.id: "/" + s.location.rsplit("/", 1)[-1] for s in addresses}
            async with Service(settings) as service:
                first: dict[str, list[float]] = {"address": [], "folder": []}
                began = time.perf_counter()
                for source in [*addresses, folder]:
                    result, ms, _ = await timed_check(service, queue, source.id)
                    if "indexed" not in result:
                        raise SystemExit(f"the first check of {source.location} indexed nothing: {result}")
                    first["address" if source.id in path_of else "folder"].append(ms)
                first_s = time.perf_counter() - began
                first_requests = sum(site.requests.values())
                documents = len(await service.documents(SHARED_SCOPE))

                checks: list[dict] = []
                statuses_before = Counter(site.statuses)
                opened.counting = True
                for n in range(1, rounds + 1):
                    for source in [*addresses, folder]:
                        before = sum(site.requests.values())
                        result, ms, cpu_ms = await timed_check(service, queue, source.id)
                        kind = "address" if source.id in path_of else "folder"
                        checks.append(
                            {
                                "round": n,
                                "kind": kind,
                                "requests": sum(site.requests.values()) - before,
                                "ms": ms,
                                "cpu_ms": cpu_ms,
                                "result": result,
                            }
                        )
                opened.counting = False
                unchanged_statuses = dict(site.statuses - statuses_before)
                documents_after = len(await service.documents(SHARED_SCOPE))
        finally:
            await queue.close()
    return figures(
        count, rounds, first, first_s, first_requests, documents, documents_after, checks, unchanged_statuses, opened
    )


def figures(
    count, rounds, first, first_s, first_requests, documents, documents_after, checks, statuses, opened
) -> dict:
    address = [c for c in checks if c["kind"] == "address"]
    folder = [c for c in checks if c["kind"] == "folder"]
    address_ms = [c["ms"] for c in address]
    folder_per_pdf = [c["ms"] / count for c in folder]
    out = {
        "pdfs": count,
        "rounds": rounds,
        "first_check_s": round(first_s, 2),
        "first_check_address_s_mean": round(statistics.mean(first["address"]) / 1000, 3),
        "first_check_folder_s": round(first["folder"][0] / 1000, 2),
        "first_check_requests": first_requests,
        "documents_after_first_check": documents,
        "documents_after_unchanged_checks": documents_after,
        "address_checks": len(address),
        "requests_per_address_check": sorted(Counter(c["requests"] for c in address).items()),
        "folder_check_requests": sum(c["requests"] for c in folder),
        "http_statuses_in_unchanged_checks": statuses,
        "address_ms_p50": statistics.median(address_ms),
        "address_ms_p95": percentile(address_ms, 0.95),
        "address_ms_max": max(address_ms),
        "address_cpu_ms_p50": statistics.median(c["cpu_ms"] for c in address),
        "address_cpu_ms_p95": percentile([c["cpu_ms"] for c in address], 0.95),
        "folder_ms_p50": statistics.median(c["ms"] for c in folder),
        "folder_ms_max": max(c["ms"] for c in folder),
        "folder_cpu_ms_p50": statistics.median(c["cpu_ms"] for c in folder),
        "folder_ms_per_pdf_p50": statistics.median(folder_per_pdf),
        "folder_ms_per_pdf_p95": percentile(folder_per_pdf, 0.95),
        "folder_ms_per_pdf_max": max(folder_per_pdf),
        "folder_cpu_ms_per_pdf_p50": statistics.median(c["cpu_ms"] / count for c in folder),
        "pdf_files_opened": sum(opened.opened.values()),
        "results": sorted(Counter(c["result"] for c in checks).items()),
    }
    one_request = all(c["requests"] == 1 for c in address) and out["folder_check_requests"] == 0
    fast = out["address_ms_p95"] < TARGET_MS and out["folder_ms_per_pdf_p95"] < TARGET_MS
    untouched = out["pdf_files_opened"] == 0 and documents_after == documents
    out["target_met"] = one_request and fast and untouched
    out["target_parts"] = {"one_request": one_request, "under_50_ms_per_pdf": fast, "nothing_read": untouched}
    return out


def print_table(f: dict) -> None:
    count = f["pdfs"]
    print(
        f"## Checking unchanged watched sources ({count} addresses on loopback + 1 folder of {count} PDFs, "
        f"{f['rounds']} rounds, local backend)\n"
    )
    print(
        f"First check (indexes everything): {f['first_check_s']:.1f} s in all; an address "
        f"{f['first_check_address_s_mean']:.2f} s on average, the folder {f['first_check_folder_s']:.1f} s; "
        f"{f['first_check_requests']} requests; {f['documents_after_first_check']} documents.\n"
    )
    per_check = ", ".join(f"{n} request(s): {k} checks" for n, k in f["requests_per_address_check"])
    print("| unchanged check | checks | requests per check | wall ms p50 / p95 / max | CPU ms p50 | ms per PDF |")
    print("|---|---|---|---|---|---|")
    print(
        f"| address | {f['address_checks']} | {per_check} | {f['address_ms_p50']:.1f} / {f['address_ms_p95']:.1f} / "
        f"{f['address_ms_max']:.1f} | {f['address_cpu_ms_p50']:.1f} | {f['address_ms_p50']:.1f} (p95 "
        f"{f['address_ms_p95']:.1f}) |"
    )
    print(
        f"| folder ({count} PDFs) | {f['rounds']} | {f['folder_check_requests']} in all | "
        f"{f['folder_ms_p50']:.1f} / - / {f['folder_ms_max']:.1f} | {f['folder_cpu_ms_p50']:.1f} "
        f"| {f['folder_ms_per_pdf_p50']:.2f} (p95 {f['folder_ms_per_pdf_p95']:.2f}, max "
        f"{f['folder_ms_per_pdf_max']:.2f}; CPU {f['folder_cpu_ms_per_pdf_p50']:.2f}) |"
    )
    print()
    print(f"HTTP statuses during the unchanged checks: {f['http_statuses_in_unchanged_checks']}")
    print(f"PDF files opened during the unchanged checks: {f['pdf_files_opened']}")
    print(
        f"Documents: {f['documents_after_first_check']} after the first check, "
        f"{f['documents_after_unchanged_checks']} after the unchanged ones"
    )
    print("Results of the unchanged checks: " + "; ".join(f"{r!r} x{n}" for r, n in f["results"]))
    parts = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in f["target_parts"].items())
    print(
        f"\nTarget (one request, under {TARGET_MS:g} ms of work per PDF): {'MET' if f['target_met'] else 'NOT MET'} "
        f"({parts})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdfs", type=int, default=20, help="addresses watched, and PDFs in the folder (default 20)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of unchanged checks (default 5)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()
    if args.pdfs < 1 or args.rounds < 1:
        raise SystemExit("--pdfs and --rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as tmp:
        result = asyncio.run(bench(args.pdfs, args.rounds, Path(tmp)))
    print_table(result)
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
