"""The Snakemake report as a reader sees it: opened in headless Chromium, every result the
workflow declared for it visited through the report's own menus, as a reader clicks.

:func:`check_report` asserts that the page renders without an error; that every file the
workflow flagged for the report (``results/report/**``) is in it, byte for byte, under a
category, with a caption the reader sees next to it; that clicking it shows it (a figure
loads, a table opens as a page with a table); and that nothing in the page refers to
another file (the report must stand alone: everything in it is a ``data:`` URL).
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from tests.support.browser import Browser, file_url

#: Helpers the walk runs in the page: find and click links, wait for React to render,
#: and list every URL the DOM refers to.
_HELPERS = r"""
window.__cga = {
  settle: () => new Promise(r => setTimeout(r, 60)),
  clickNav: async (text) => {
    const links = Array.from(document.querySelectorAll('nav a'));
    const a = links.find(a => a.textContent.trim() === text);
    if (!a) return false;
    a.click();
    await window.__cga.settle();
    return true;
  },
  home: async () => {
    document.querySelector('nav ol a').click();  // the breadcrumbs' first link
    await window.__cga.settle();
  },
  rows: () => Array.from(document.querySelectorAll('nav table tbody tr')),
  references: () => Array.from(document.querySelectorAll('[src], [href]')).flatMap(
    el => ['src', 'href'].filter(k => el.hasAttribute(k)).map(k => el.getAttribute(k))),
};
true
"""


def _decode(data_uri: str) -> bytes:
    head, _, body = data_uri.partition(",")
    return base64.b64decode(body) if head.endswith(";base64") else unquote_to_bytes(body)


def _text(caption_html: str) -> str:
    """A caption's text as the page shows it, compared without its white space (tags out,
    entities decoded; the page puts line breaks where the HTML has blocks)."""
    return _squeeze(html.unescape(re.sub(r"<[^>]+>", "", caption_html)))


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _declared(workspace: Path) -> dict[str, bytes]:
    """The files the workflow flagged for the report, by their path in the workspace."""
    folder = workspace / "results" / "report"
    return {
        p.relative_to(workspace).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _outside(reference: str) -> bool:
    """Whether a URL in the page points outside it (another file, the network)."""
    return not (reference == "" or reference.startswith(("#", "data:", "javascript:void")))


def _visit_result(b: Browser, path: str, entry: dict[str, Any], seen: list[str]) -> None:
    """The result's row: its caption in the info panel, then its content shown."""
    index = b.evaluate(
        f"window.__cga.rows().findIndex(r => r.textContent.includes({path!r}))"
        if entry.get("labels") is None
        else f"window.__cga.rows().findIndex(r => Object.values({entry['labels']!r}).every("
        "v => r.textContent.includes(v)))"
    )
    assert index >= 0, f"{path}: no row in its category's table"
    # The row's last button shows the result's information, with its caption.
    b.evaluate(
        f"(async () => {{ const links = window.__cga.rows()[{index}].querySelectorAll('a');"
        " links[links.length - 1].click(); await window.__cga.settle(); })()"
    )
    shown = _squeeze(b.evaluate("document.querySelector('nav').innerText"))
    assert "DESCRIPTION" in shown.upper(), f"{path}: no description in its information"
    assert _text(entry["caption"]) in shown, f"{path}: its caption is not shown"
    seen += b.evaluate("window.__cga.references()")
    # The eye button next to its name shows it.
    b.evaluate(
        "(async () => { document.querySelector('nav a[iconname=eye]').click();"
        " await window.__cga.settle(); })()"
    )
    mime = entry["mime_type"]
    if mime.startswith("image/"):
        loaded = b.wait_for(
            "(() => { const i = document.querySelector('#app > div > nav ~ div img');"
            " return i && i.complete && i.naturalWidth > 0 && i.getAttribute('src'); })()",
            f"{path}: its image",
        )
        assert loaded == entry["data_uri"], f"{path}: another image is shown"
    elif mime == "text/html":
        src = b.wait_for(
            "(() => { const f = document.querySelector('#app > div > nav ~ div iframe');"
            " return f && f.getAttribute('src'); })()",
            f"{path}: its page",
        )
        assert src == entry["data_uri"], f"{path}: another page is shown"
        assert b"<table>" in _decode(src), f"{path}: the page shows no table"
    else:
        raise AssertionError(f"{path}: {mime} is only offered as a download, not shown")
    seen += b.evaluate("window.__cga.references()")
    b.evaluate("window.__cga.home()")


def check_report(report: Path, workspace: Path) -> dict[str, list[str]]:
    """Opens ``report`` (built in ``workspace``) and walks it; returns the results seen per
    category. Fails with what a reader would find wrong."""
    declared = _declared(workspace)
    assert declared, f"{workspace}: nothing under results/report (no report() outputs)"
    url = file_url(report)
    with Browser() as b:
        b.open(url)
        b.wait_for("document.querySelector('#app nav a') !== null", "the report's menu")
        b.evaluate(_HELPERS)
        results: dict[str, dict[str, Any]] = b.evaluate("results")
        categories: dict[str, dict[str, list[str]]] = b.evaluate("categories")
        # The landing page shows the workflow's description (workflow/report/workflow.rst).
        landing = _squeeze(b.evaluate("document.body.innerText"))
        description = _text(b.evaluate("workflow_desc"))
        assert description and description in landing, "the workflow's description"
        b.wait_for("document.querySelector('#rulegraph canvas') !== null", "the rule graph")

        assert sorted(results) == sorted(declared), "the report's results and the workflow's"
        for path, data in declared.items():
            entry = results[path]
            assert entry.get("caption"), f"{path}: no caption"
            assert _decode(entry["data_uri"]) == data, f"{path}: embedded bytes differ"
        listed = sorted(p for subs in categories.values() for ps in subs.values() for p in ps)
        assert listed == sorted(declared), "every result in a category, once"

        seen: list[str] = b.evaluate("window.__cga.references()")
        walked: dict[str, list[str]] = {}
        for category, subcategories in categories.items():
            for subcategory, paths in subcategories.items():
                assert b.evaluate(f"window.__cga.clickNav({category!r})"), category
                if len(subcategories) > 1:
                    assert b.evaluate(f"window.__cga.clickNav({subcategory!r})"), subcategory
                for path in paths:
                    _visit_result(b, path, results[path], seen)
                    b.evaluate(f"window.__cga.clickNav({category!r})")
                    if len(subcategories) > 1:
                        b.evaluate(f"window.__cga.clickNav({subcategory!r})")
                    walked.setdefault(category, []).append(path)
                b.evaluate("window.__cga.home()")
        captions = [
            ref
            for e in results.values()
            for ref in re.findall(r"""(?:href|src)=["']([^"']*)["']""", e["caption"])
        ]
        outside = sorted({r for r in [*seen, *captions] if _outside(r)})
        assert not outside, f"the report refers to files outside it: {outside}"
        requested = sorted({u for u in b.requested() if u != url and not u.startswith("data:")})
        assert not requested, f"the report loaded other files: {requested}"
        assert not b.complaints(), b.complaints()
    return walked
