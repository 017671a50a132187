"""Rendering the view's pages in-process (Solara's test renderer, no browser)."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from typing import Any

import pytest


class Page:
    """A rendered page and the few ways a test reads and drives it."""

    def __init__(self, rc: Any) -> None:
        self.rc = rc

    def find(self, cls: Any, **match: Any) -> Any:
        return self.rc.find(cls, **match)

    def widgets(self, cls: Any = None) -> list[Any]:
        """Every widget of the page (of class ``cls``), nested ones included, in page order."""
        import ipywidgets

        root = self.rc.find().widgets
        out, stack, seen = [], list(reversed(root)), set()
        while stack:
            w = stack.pop()
            if id(w) in seen:
                continue
            seen.add(id(w))
            if cls is None or isinstance(w, cls):
                out.append(w)
            nested = []
            for name in w.keys:
                value = getattr(w, name, None)
                items = value if isinstance(value, list | tuple) else [value]
                nested += [x for x in items if isinstance(x, ipywidgets.Widget)]
            stack.extend(reversed(nested))
        return out

    def texts(self) -> list[str]:
        """Every string shown as a child of a widget (text, titles, buttons)."""
        return [c for w in self.widgets() for c in (getattr(w, "children", None) or [])
                if isinstance(c, str)]

    def html(self) -> str:
        """The page's raw HTML pieces (summary, moves table, banners), joined."""
        import solara.widgets

        return "\n".join(w.unsafe_innerHTML or "" for w in self.widgets(solara.widgets.HTML))

    def alerts(self) -> str:
        import ipyvuetify as v

        return " ".join(str(c) for a in self.widgets(v.Alert) for c in a.children)

    def charts(self) -> list[dict[str, Any]]:
        from market.view.chart import LiveVegaLite

        return [w.spec for w in self.widgets(LiveVegaLite)]

    def click(self, label: str) -> None:
        import ipyvuetify as v

        self.rc.find(v.Btn, children=[label]).widget.click()

    def sliders(self, label_start: str) -> list[Any]:
        """The sliders whose label starts with ``label_start``, in page order."""
        import ipyvuetify as v

        return [w for w in self.widgets(v.Slider) if w.label.startswith(label_start)]

    def slider(self, label_start: str, value: int) -> None:
        import ipyvuetify as v

        sliders = self.widgets(v.Slider)
        matches = [w for w in sliders if w.label.startswith(label_start)]
        assert matches, [w.label for w in sliders]
        matches[0].v_model = value  # the first in page order

    def range_slider(self, label_start: str, value: tuple[int, int]) -> None:
        import ipyvuetify as v

        sliders = self.widgets(v.RangeSlider)
        matches = [w for w in sliders if w.label.startswith(label_start)]
        assert matches, [w.label for w in sliders]
        matches[0].v_model = list(value)

    def type_in(self, label: str, text: str) -> None:
        """Type into a text field and press Enter (Solara takes the value then)."""
        import ipyvuetify as v

        field = self.rc.find(v.TextField, label=label).widget
        field.v_model = text
        field.fire_event("keyup.enter")

    def tick(self, label: str, value: bool = True) -> None:
        import ipyvuetify as v

        self.rc.find(v.Checkbox, label=label).widget.v_model = value

    def toggle(self, current: str, choice: str) -> None:
        """Choose ``choice`` in the toggle group whose buttons include ``current``."""
        import ipyvuetify as v

        for group in self.widgets(v.BtnToggle):
            labels = [b.children[0] for b in group.children]
            if current in labels and choice in labels:
                group.v_model = labels.index(choice)
                return
        raise AssertionError(f"no toggle with {current!r} and {choice!r}")

    def wait_for_text(self, needle: str, timeout: float = 60.0) -> None:
        """Wait for a background task (training) to show ``needle``."""
        self.wait_until(lambda: any(needle in t for t in self.texts()), timeout, needle)

    def wait_until(self, ready: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.05)
        raise AssertionError(f"not ready within {timeout} s: {what} {self.texts()}")

    def enabled(self, label: str) -> bool:
        import ipyvuetify as v

        return not self.rc.find(v.Btn, children=[label]).widget.disabled


@pytest.fixture
def render() -> Callable[..., Page]:
    """``render(Component, *args)``: the component in Solara's app layout, rendered."""
    import solara

    contexts = []

    def _render(component: Any, *args: Any) -> Page:
        @solara.component
        def App() -> None:
            with solara.AppLayout():
                component(*args)

        # outside a kernel, Solara's app layout prints the app-bar elements it cannot mount
        with contextlib.redirect_stdout(io.StringIO()):
            _, rc = solara.render(App(), handle_error=False)
        contexts.append(rc)
        return Page(rc)

    yield _render
    for rc in contexts:
        rc.close()
