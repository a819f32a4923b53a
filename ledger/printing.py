"""Paper: the club's books as PDFs (the night report, a player's statement), printed
from the same HTML the console shows, by WeasyPrint.

WeasyPrint lays out HTML and CSS for pages; it needs the system's Pango, which a machine
without it lacks. It is imported on first use, not at start, so that a service on such a
machine still starts and answers everything but a PDF, which it refuses with
`PrintingUnavailable` saying what to install.

A PDF fetches nothing: every stylesheet and image it uses is inline (a chart is SVG in
the page), and the fetcher refuses any address, so a name or a note a player typed can
never make the server reach out.
"""

from __future__ import annotations

INSTALL = "apt-get install libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core"
"""What a Debian machine installs for WeasyPrint to print (Pango, and a font)."""


class PrintingUnavailable(Exception):
    """This machine cannot print PDFs: what it lacks, and how to install it."""


def pdf_of(html: str) -> bytes:
    """The PDF of a whole HTML page. Its CSS says the paper (`@page`)."""
    try:
        import weasyprint
    except (ImportError, OSError) as missing:  # OSError: Pango's library is not there
        raise PrintingUnavailable(
            f"PDFs need WeasyPrint and the system's Pango ({missing}); on Debian: {INSTALL}"
        ) from missing
    # data: is the page's own bytes (an inline image); every other scheme is refused.
    fetcher = weasyprint.URLFetcher(allowed_protocols=("data",), allow_redirects=False)
    pdf: bytes = weasyprint.HTML(string=html, url_fetcher=fetcher).write_pdf()
    return pdf
