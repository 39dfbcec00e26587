"""The probes a load balancer or Kubernetes sends (bot/health.py): /healthz while the process runs,
/readyz only while questions can be answered, with the reason when they cannot."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bot.health import serve_health
from core import Service, Settings, Turn
from tests.conftest import closed_port, text_pdf


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """The metrics as Prometheus's own text parser reads them: (name, labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as response:
        return response.status, await response.text()


async def test_ready_until_the_index_is_damaged_and_until_the_platform_goes(tmp_path: Path):
    settings = Settings(index_dir=tmp_path / "index")
    service = Service(settings)
    await service.index([str(text_pdf(tmp_path / "pump.pdf", ["Pump P9. Weight: 2.6 kg."]))])
    platform: list[str | None] = [None]

    async def connected() -> str | None:
        return platform[0]

    port = closed_port()
    runner = await serve_health(port, service, connected)
    try:
        assert await get(port, "/healthz") == (200, "ok\n")
        assert await get(port, "/readyz") == (200, "ready\n")
        platform[0] = "not connected to Slack"
        assert await get(port, "/readyz") == (503, "not connected to Slack\n")
        platform[0] = None
        (tmp_path / "index" / "ACTIVE").write_bytes(b"\xff\xfe\x00junk")
        fresh = Service(settings)  # a process that starts on the damaged index
        await runner.cleanup()
        runner = await serve_health(port, fresh, connected)
        status, reason = await get(port, "/readyz")
        assert status == 503 and "ACTIVE pointer is damaged" in reason, reason
        assert await get(port, "/healthz") == (200, "ok\n")  # alive all the same: restarting will not help
        await fresh.close()
    finally:
        await runner.cleanup()
        await service.close()


async def test_the_probe_port_serves_the_page_viewer_only_when_links_are_made(tmp_path: Path):
    public = "https://pixelrag.example.com"
    settings = Settings(index_dir=tmp_path / "index", public_url=public)
    service = Service(settings)
    await service.index([str(text_pdf(tmp_path / "pump.pdf", ["Pump P9. Weight: 2.6 kg."]))])
    [citation] = (await service.answer(Turn("How much does the pump P9 weigh?"))).citations
    path = citation.url.removeprefix(public)
    for serving, expected in ((service, 200), (Service(settings.with_(public_url=None)), 404)):
        port = closed_port()
        runner = await serve_health(port, serving)
        try:
            status, page = await get(port, path)
            assert status == expected and ("pump.pdf" in page) == (expected == 200)
        finally:
            await runner.cleanup()
            await serving.close()
