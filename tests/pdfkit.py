"""Looking at a PDF the way a reader does: its pages rendered to images (pypdfium2, the
PDF engine of Chromium), their text, and how much of each page is ink.

A PDF's test renders it, saves the pages as PNG beside the test's other files (to look
at by eye when it fails) and asserts what a reader would check: the page count, the
words and figures on them, and that nothing runs off the paper."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image


def page_texts(pdf: bytes) -> list[str]:
    """The text of each page, in reading order."""
    doc = pdfium.PdfDocument(pdf)
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def page_images(pdf: bytes, scale: float = 1.0) -> list[Image.Image]:
    """Each page as an RGB image, at 72 * scale dots per inch."""
    doc = pdfium.PdfDocument(pdf)
    try:
        return [doc[i].render(scale=scale).to_pil().convert("RGB") for i in range(len(doc))]
    finally:
        doc.close()


def save_pngs(pdf: bytes, folder: Path, stem: str, scale: float = 1.5) -> list[Path]:
    """The pages as PNG files `stem-1.png`, `stem-2.png`... in `folder`."""
    paths = []
    for n, image in enumerate(page_images(pdf, scale), start=1):
        path = folder / f"{stem}-{n}.png"
        image.save(path)
        paths.append(path)
    return paths


def ink(image: Image.Image) -> float:
    """The share of the image's pixels that are not white: 0 for a blank page."""
    grey = image.convert("L")
    histogram = grey.histogram()
    return 1 - sum(histogram[250:]) / (grey.width * grey.height)


def ink_at_edges(image: Image.Image, margin: int) -> float:
    """The share of non-white pixels within `margin` pixels of the paper's edges: text
    or a table that ran off the page's printable area shows here."""
    width, height = image.size
    strips = [
        image.crop((0, 0, width, margin)),
        image.crop((0, height - margin, width, height)),
        image.crop((0, 0, margin, height)),
        image.crop((width - margin, 0, width, height)),
    ]
    return max(ink(strip) for strip in strips)
