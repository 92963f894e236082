"""Reading a drawn figure back: every text a reader sees, and whether tick labels collide.

`capture_figures` records each matplotlib figure as it is saved (the figure code itself runs
unchanged), so a test can inspect titles, tick labels, legends and panel texts.
"""

import itertools

import matplotlib.figure
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

RAW_MARKERS = ("?", "salt=", "delay_s=", "|")


@pytest.fixture
def capture_figures(monkeypatch):
    figures = []
    original = matplotlib.figure.Figure.savefig

    def savefig(self, *args, **kwargs):
        if self not in figures:
            figures.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return figures


def _drawn(fig):
    """The figure drawn on an Agg canvas (a closed figure has lost its own) and its renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def visible_texts(fig) -> list[str]:
    """Every non-empty text of the figure: suptitle, titles, axis and tick labels, legends,
    annotations."""
    _drawn(fig)
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible()]
    return [t.get_text() for t in texts if t.get_text().strip()]


def tick_label_overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of tick labels on one axis of one panel whose drawn boxes overlap."""
    renderer = _drawn(fig)
    overlaps = []
    for ax in fig.axes:
        for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
            shown = [t for t in labels if t.get_visible() and t.get_text().strip()]
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in shown]
            for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
                if box_a.overlaps(box_b):
                    overlaps.append((a, b))
    return overlaps


def assert_readable(fig, *, shows: tuple[str, ...] = (), hides: tuple[str, ...] = ()) -> str:
    """No raw query string anywhere, no colliding tick labels; every `shows` text present and
    no `hides` text. Returns all the figure's text joined (for further checks)."""
    texts = visible_texts(fig)
    everything = "\n".join(texts)
    raw = [t for t in texts if any(marker in t for marker in RAW_MARKERS)]
    assert not raw, f"raw model strings in labels: {raw}"
    assert not tick_label_overlaps(fig), tick_label_overlaps(fig)
    for text in shows:
        assert text in everything, f"{text!r} not in the figure's texts: {texts}"
    for text in hides:
        assert text not in everything, f"{text!r} shown in the figure: {texts}"
    return everything


def na_texts(fig) -> list[str]:
    return [t for t in visible_texts(fig) if t.startswith("n/a")]


def texts_outside_their_axes(fig) -> list[str]:
    """Texts drawn inside a panel (titles and tick labels aside) whose box leaves the panel."""
    renderer = _drawn(fig)
    outside = []
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        for text in ax.texts:
            if not (text.get_visible() and text.get_text().strip()):
                continue
            box = text.get_window_extent(renderer)
            if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1:
                outside.append(text.get_text())
    return outside


def value_labels_crossed_by_error_bars(fig) -> list[str]:
    """Texts inside a panel that a vertical error-bar line runs through."""
    renderer = _drawn(fig)
    crossed = []
    for ax in fig.axes:
        segments = []
        for collection in ax.collections:
            if isinstance(collection, matplotlib.collections.LineCollection):
                for segment in collection.get_segments():
                    (x0, y0), (x1, y1) = ax.transData.transform(segment[[0, -1]])
                    if abs(x0 - x1) < 0.5 and abs(y0 - y1) > 0.5:
                        segments.append((x0, min(y0, y1), max(y0, y1)))
        for text in ax.texts:
            box = text.get_window_extent(renderer)
            if any(box.x0 <= x <= box.x1 and low < box.y1 and high > box.y0
                   for x, low, high in segments):
                crossed.append(text.get_text())
    return crossed
