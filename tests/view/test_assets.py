"""Offline JavaScript: the chart widget's ``vega@5``-style names resolve to installed files."""

from __future__ import annotations

from market.view.assets import installed_cdn, major_aliases, offline_cdn


def test_major_aliases_pick_the_newest_installed_version():
    names = ["vega@5.21.0", "vega@5.9.1", "vega-lite@5.2.0", "requirejs@2.3.6", "@widgetti",
             "vega-embed@6.20.2", "vega@4.0.0"]
    assert major_aliases(names) == {"vega@5": "vega@5.21.0", "vega@4": "vega@4.0.0",
                                    "vega-lite@5": "vega-lite@5.2.0",
                                    "requirejs@2": "requirejs@2.3.6",
                                    "vega-embed@6": "vega-embed@6.20.2"}
    assert major_aliases(["vega@5", "vega@5.21.0"]) == {}  # an existing name is kept


def test_the_chart_widgets_files_are_served_from_the_installed_assets(tmp_path):
    cdn = offline_cdn(tmp_path / "cdn")
    # the paths Solara's VegaLite widget requests (solara/widgets/vue/vegalite.vue)
    for path in ("vega@5/build/vega.min.js", "vega-lite@5/build/vega-lite.min.js",
                 "vega-embed@6/build/vega-embed.min.js", "requirejs@2.3.6/require.js"):
        assert (cdn / path).is_file(), path
        assert (cdn / path).stat().st_size > 1000
    assert (cdn / "vega@5").resolve().parent == installed_cdn().resolve()
    offline_cdn(tmp_path / "cdn")  # idempotent: a second call finds the links in place


def test_no_installed_assets_gives_an_empty_folder(tmp_path):
    assert list(offline_cdn(tmp_path / "cdn", source=tmp_path / "nothing").iterdir()) == []
