"""The PDF printer itself: it prints a page, and fetches nothing a page names."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger import printing
from tests import pdfkit

PAGE = """<!doctype html><html><head><style>
@page {{ size: A4; margin: 15mm }}
body {{ font-family: sans-serif }}
</style>{head}</head><body><h1>Night report</h1><p>Takings 1,250</p>{body}</body></html>"""


def test_a_page_prints_with_its_words() -> None:
    pdf = printing.pdf_of(PAGE.format(head="", body=""))
    assert pdf.startswith(b"%PDF-")
    texts = pdfkit.page_texts(pdf)
    assert len(texts) == 1
    assert "Night report" in texts[0] and "Takings 1,250" in texts[0]
    (image,) = pdfkit.page_images(pdf)
    assert pdfkit.ink(image) > 0.001
    assert pdfkit.ink_at_edges(image, margin=20) == 0


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A web server on loopback that notes every path asked of it."""
    asked: list[str] = []

    class Noting(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/css")
            self.end_headers()
            self.wfile.write(b'h1::after { content: "FETCHED" }')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Noting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def test_a_page_fetches_nothing_it_names(listener: tuple[str, list[str]], tmp_path: Path) -> None:
    address, asked = listener
    secret = tmp_path / "secret.css"
    secret.write_text('p::after { content: "SECRET" }')
    head = (
        f'<link rel="stylesheet" href="{address}/style.css">'
        f'<link rel="stylesheet" href="{secret.as_uri()}">'
    )
    body = f'<img src="{address}/logo.png"><img src="{secret}">'
    pdf = printing.pdf_of(PAGE.format(head=head, body=body))
    text = "".join(pdfkit.page_texts(pdf))
    assert asked == []
    assert "FETCHED" not in text and "SECRET" not in text
    assert "Takings 1,250" in text


def test_an_inline_image_is_printed() -> None:
    # a black square as an inline SVG image, as a chart or a logo in the page would be
    square = (
        "data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 width=%2210%22"
        " height=%2210%22%3E%3Crect width=%2210%22 height=%2210%22/%3E%3C/svg%3E"
    )
    body = f'<img src="{square}" style="width:40mm;height:40mm">'
    plain = pdfkit.ink(pdfkit.page_images(printing.pdf_of(PAGE.format(head="", body="")))[0])
    with_image = pdfkit.page_images(printing.pdf_of(PAGE.format(head="", body=body)))[0]
    assert pdfkit.ink(with_image) > plain + 0.01
