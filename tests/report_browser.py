"""Driving Snakemake's report.html (a React app, snakemake 9: snakemake/report/html_reporter/
template/components/*.js) in headless chromium as a reader does: clicking its links and view
icons, then waiting, with a deadline, for what the app draws.

What the app does with a click (read in snakemake 9.27's template): a result's link in a caption
or in the landing text (workflow.rst) is `javascript:app.showResultInfo('<path>')`, which puts
the result's panel (path, caption, view icon) in the navbar; the view icon ("eye",
result_view_button.js) shows a PNG as an <img> and an HTML item in an <iframe>, both from the
item's data: URI, and offers any other kind (a .md table) as a download.
"""

from __future__ import annotations

import json
import re
import time

from .headless_chromium import Chromium

WAIT_S = 30.0  # a bound on React drawing after a click (milliseconds on a quiet machine)
POLL_MS = 100


def wait_for(browser: Chromium, condition: str, what: str, timeout_s: float = WAIT_S):
    """The value of the JS expression `condition` once it is truthy (true for an element),
    polled every POLL_MS in the page; past `timeout_s` an AssertionError naming `what`."""
    script = (
        "new Promise(done => { const deadline = Date.now() + %d;"
        " const poll = () => { let value; try { value = (%s); } catch (e) { value = null; }"
        " if (value || Date.now() > deadline) done(value instanceof Node || value || null);"
        " else setTimeout(poll, %d); }; poll(); })" % (timeout_s * 1000, condition, POLL_MS))
    value = browser.evaluate(script)
    assert value, f"not drawn within {timeout_s} s: {what} ({condition})"
    return value


def click(browser: Chromium, element: str, what: str) -> None:
    """Dispatch a reader's click (a bubbling, cancelable MouseEvent) on the element the JS
    expression `element` finds: a link follows its href, React's handlers see it at the root."""
    found = browser.evaluate(
        f"(() => {{ const e = ({element}); if (!e) return false;"
        " e.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}));"
        " return true; })()")
    assert found, f"nothing to click: {what} ({element})"


def result_panel_shows(path: str) -> str:
    """A JS condition: the navbar shows the result panel of `path` with its caption drawn (the
    caption's text, as the app has it in `results`)."""
    return ("(() => { const nav = document.querySelector('nav'); const r = results[%s];"
            " if (!nav || !r) return null;"
            " const caption = document.createElement('div'); caption.innerHTML = r.caption || '';"
            " const flat = s => s.replace(/\\s+/g, ' ').trim();"
            " const want = flat(caption.textContent).slice(0, 60); const text = flat(nav.innerText);"
            " return text.includes(%s) && text.includes(want) ? text : null; })()"
            % (json.dumps(path), json.dumps(path)))


def view_icon(path: str) -> str:
    """A JS expression: the view icon (an <a> holding an <svg>) beside `path` in its panel."""
    return ("[...document.querySelectorAll('nav li span.flex')]"
            f".filter(s => s.textContent.trim() === {json.dumps(path)})"
            ".map(s => s.querySelector('a[type=button]')).find(a => a)")


def frame_text(browser: Chromium, url_prefix: str, until: str, what: str,
               timeout_s: float = WAIT_S) -> str:
    """The text (white space made single spaces) of the first child frame whose URL starts with
    `url_prefix` (an item shown from its data: URI is another origin: read through the
    protocol, in an isolated world of that frame) once the regular expression `until` finds
    something in it; an AssertionError naming `what` past `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        tree = browser.call("Page.getFrameTree")["frameTree"]
        frames = [c["frame"] for c in tree.get("childFrames", [])
                  if c["frame"].get("url", "").startswith(url_prefix)]
        text = ""
        if frames:
            world = browser.call("Page.createIsolatedWorld", frameId=frames[0]["id"],
                                 worldName="rubriclab-test")
            answer = browser.call("Runtime.evaluate", contextId=world["executionContextId"],
                                  expression="document.body ? document.body.innerText : ''",
                                  returnByValue=True)
            text = " ".join((answer["result"].get("value") or "").split())
        if re.search(until, text):
            return text
        if time.monotonic() > deadline:
            found = [c["frame"].get("url", "")[:80] for c in tree.get("childFrames", [])]
            raise AssertionError(f"no frame of {url_prefix!r} showing {until!r} within "
                                 f"{timeout_s} s: {what} (child frames: {found}; text: "
                                 f"{text[:300]!r})")
        time.sleep(POLL_MS / 1000)
