"""What a page link opens, on both stores: the cited page of the version cited, in the collection it was
cited in, and nothing of any document for a link that was changed, has expired, or whose document was
removed or moved; a re-indexed document's old link shows the cited version while its PDF is stored."""

from __future__ import annotations

import os
import stat
import time

import pytest

from core import LinkChanged, LinkRefused, Service, Settings, Turn, channel_scope
from core.links import Links
from core.records import Highlight
from tests.conftest import text_pdf

PUBLIC = "https://pixelrag.example.com"
WORKSPACE = "slack:T1"
CHANNEL = channel_scope(WORKSPACE, "C1")


@pytest.fixture(scope="module")
def local():
    from core.backends import make_backend

    return make_backend(Settings(backend="local"))


@pytest.fixture(params=["folder", "postgresql"])
def store_settings(request, tmp_path) -> Settings:
    base = Settings(index_dir=tmp_path / "index", backend="local", public_url=PUBLIC)
    if request.param == "postgresql":
        return base.with_(database_url=request.getfixturevalue("database_url"))
    return base


def manual(tmp_path, version: int = 1):
    return text_pdf(
        tmp_path / f"v{version}" / "x200-manual.pdf",
        [
            "X200 dishwasher manual. Chapter 1: installation.",
            f"The X200 warranty period is {2 * version} years from the date of purchase.",
            "Chapter 3: cleaning the filter every month.",
        ],
    )


def token_of(url: str) -> str:
    assert url.startswith(f"{PUBLIC}/view/"), url
    return url.removeprefix(f"{PUBLIC}/view/")


async def indexed(service: Service, tmp_path, version: int = 1, scope: str = CHANNEL):
    (tmp_path / f"v{version}").mkdir(exist_ok=True)
    path = manual(tmp_path, version)
    await service.index_bytes(path.read_bytes(), "x200-manual.pdf", scope=scope)
    return path


async def test_a_citation_link_opens_its_page_with_the_evidence_and_the_pdf(store_settings, local, tmp_path):
    async with Service(store_settings, backend=local) as service:
        pdf = await indexed(service, tmp_path)
        answer = await service.answer(Turn("How long is the X200 warranty period?", scope=CHANNEL))
        cited = next(c for c in answer.citations if c.page == 2)
        view = await service.view_page(token_of(cited.url))
        assert (view.document.title, view.document.file_name, view.link.page) == (cited.title, "x200-manual.pdf", 2)
        assert view.link.kind == cited.highlight.kind and view.link.box == pytest.approx(cited.highlight.box, abs=1e-4)
        assert view.current is None and view.previous and view.next
        assert (await service.view_page(view.previous)).link.page == 1
        assert (await service.view_page(view.next)).link.page == 3
        assert (await service.view_page(view.next)).link.box is None  # a neighbour has no mark
        image = await service.page_image(view.image)
        assert image.startswith(b"\xff\xd8\xff")
        document, data = await service.page_pdf(view.image)
        assert data == pdf.read_bytes() and document.page_count == 3
        # The first page has no previous one; the last no next one.
        last = await service.view_page(view.next)
        assert last.next is None and (await service.view_page(view.previous)).previous is None


async def test_links_are_made_only_with_a_public_address(store_settings, local, tmp_path):
    async with Service(store_settings.with_(public_url=None), backend=local) as service:
        await indexed(service, tmp_path)
        answer = await service.answer(Turn("How long is the X200 warranty period?", scope=CHANNEL))
        assert answer.citations and all(c.url is None for c in answer.citations)


async def test_a_changed_forged_or_expired_link_opens_nothing(store_settings, local, tmp_path):
    async with Service(store_settings, backend=local) as service:
        await indexed(service, tmp_path)
        links = await service.links()
        [document] = await service.documents(CHANNEL)
        token = links.token(links.link(document, 2, Highlight("exact", (0.1, 0.1, 0.5, 0.2)), time.time()))
        await service.view_page(token)  # opens
        payload, signature = token.split(".")
        for changed in (
            f"{payload[:-2]}{'A' if payload[-2] != 'A' else 'B'}{payload[-1]}.{signature}",
            f"{payload}.{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}",
            Links(b"another pixelrag's secret!", PUBLIC).token(links.link(document, 2, None, time.time())),
            "..%2F..%2Fetc%2Fpasswd",
            "",
            "a" * 5000,
        ):
            with pytest.raises(LinkRefused) as refused:
                await service.view_page(changed)
            assert refused.value.status == 404 and document.title not in str(refused.value)
        expired = links.token(links.link(document, 2, None, time.time() - 91 * 86_400))
        with pytest.raises(LinkRefused) as refused:
            await service.view_page(expired)
        assert refused.value.status == 410 and "expired" in str(refused.value)
        beyond = links.token(links.link(document, 9, None, time.time()))
        with pytest.raises(LinkRefused) as refused:
            await service.page_image(beyond)
        assert refused.value.status == 404


async def test_a_removed_or_moved_document_opens_nothing_under_an_old_link(store_settings, local, tmp_path):
    async with Service(store_settings, backend=local) as service:
        await indexed(service, tmp_path)
        [document] = await service.documents(CHANNEL)
        links = await service.links()
        token = links.token(links.link(document, 2, None, time.time()))
        await service.move(CHANNEL, document.doc_id, WORKSPACE)  # to the whole workspace
        for open_ in (service.view_page, service.page_image, service.page_pdf):
            with pytest.raises(LinkRefused) as refused:
                await open_(token)
            assert refused.value.status == 410 and document.title not in str(refused.value)
        [moved] = await service.documents(WORKSPACE)
        token = links.token(links.link(moved, 2, None, time.time()))
        await service.view_page(token)
        await service.remove(WORKSPACE, moved.doc_id)
        with pytest.raises(LinkRefused) as refused:
            await service.page_pdf(token)
        assert refused.value.status == 410


async def test_a_reindexed_document_opens_the_cited_version_while_it_is_stored(store_settings, local, tmp_path):
    async with Service(store_settings, backend=local) as service:
        first = await indexed(service, tmp_path, version=1)
        [old] = await service.documents(CHANNEL)
        links = await service.links()
        token = links.token(links.link(old, 2, Highlight("approximate", (0.1, 0.1, 0.9, 0.3)), time.time()))
        await indexed(service, tmp_path, version=2)  # the same file name, other content
        [new] = await service.documents(CHANNEL)
        assert new.sha256 != old.sha256
        if not store_settings.database_url:  # the folder keeps the previous snapshot's PDFs
            view = await service.view_page(token)
            assert view.document.sha256 == old.sha256 and view.current.sha256 == new.sha256
            assert (await service.view_page(view.current_token)).document.sha256 == new.sha256
            assert (await service.page_pdf(token))[1] == first.read_bytes()
            assert (await service.page_image(token)).startswith(b"\xff\xd8\xff")  # drawn from the stored PDF
            (store_settings.index_dir / "sources" / f"{old.sha256}.pdf").unlink()
        # Once the cited version's PDF is gone (the database drops it with the version), the link says so.
        for open_ in (service.view_page, service.page_image, service.page_pdf):
            with pytest.raises(LinkChanged) as changed:
                await open_(token)
            assert changed.value.status == 410
        assert (await service.view_page(changed.value.current_token)).document.sha256 == new.sha256


async def test_the_link_secret_is_made_once_and_shared_by_every_process(store_settings, local, tmp_path):
    async with Service(store_settings, backend=local) as one, Service(store_settings, backend=local) as two:
        await indexed(one, tmp_path)
        [document] = await one.documents(CHANNEL)
        token = (await one.links()).token((await one.links()).link(document, 1, None, time.time()))
        assert (await two.view_page(token)).link.page == 1
    if not store_settings.database_url:
        mode = os.stat(store_settings.index_dir / "link-secret").st_mode
        assert stat.S_IMODE(mode) == 0o600
    # A secret set in the environment wins, and links made under the stored one no longer open.
    async with Service(store_settings.with_(link_secret="s" * 40), backend=local) as three:
        with pytest.raises(LinkRefused):
            await three.view_page(token)


async def test_an_answer_goes_without_links_when_no_secret_can_be_kept(local, tmp_path, monkeypatch, caplog):
    import errno
    import logging

    from core.embedded import disk
    from core.errors import IndexProblem

    real_open = os.open

    def read_only(path, *args, **kwargs):
        if str(path).endswith("link-secret"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, *args, **kwargs)

    settings = Settings(index_dir=tmp_path / "index", backend="local", public_url=PUBLIC)
    async with Service(settings, backend=local) as service:
        await indexed(service, tmp_path)
        monkeypatch.setattr(disk.os, "open", read_only)
        with pytest.raises(
            IndexProblem, match="link-secret: the page links' secret cannot be kept .*PIXELRAG_LINK_SECRET"
        ):
            await service.links()
        with caplog.at_level(logging.WARNING, "pixelrag"):
            answer = await service.answer(Turn("How long is the X200 warranty period?", scope=CHANNEL))
        assert answer.citations and all(c.url is None for c in answer.citations)
        assert "answer sent without page links" in caplog.text
