"""``--plot`` writes the format its extension names (png, svg, pdf) and refuses any other
extension in one line before any work (issue 9 leftover: it wrote PNG whatever the name)."""

from __future__ import annotations

import pytest

from stratus.app.cli import main
from tests.helpers.paths import FIXTURES

SWF = FIXTURES / "swf" / "small.swf"
MAGIC = {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}


@pytest.mark.slow
@pytest.mark.parametrize("name, fmt", [("t.png", "png"), ("t.svg", "svg"), ("t.pdf", "pdf"),
                                       ("T.SVG", "svg")])
def test_describe_plots_in_the_format_of_the_extension(tmp_path, capsys, name, fmt):
    out = tmp_path / name
    assert main(["traces", "describe", str(SWF), "--plot", str(out), "--json"]) == 0
    capsys.readouterr()
    assert out.read_bytes().startswith(MAGIC[fmt])
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary left


@pytest.fixture
def no_work(monkeypatch):
    import stratus.app.session as cli_session

    def loaded(*a, **k):
        raise AssertionError("the trace was loaded before the plot name was checked")

    monkeypatch.setattr(cli_session, "Session", loaded)


@pytest.mark.parametrize("cmd", [["traces", "describe", str(SWF)],
                                 ["advise", "--trace", str(SWF), "--reserved-cores", "4",
                                  "--reserved-mem-gb", "16", "--policy", "njw"]])
@pytest.mark.parametrize("name, needle", [
    ("x.jpg", "extension '.jpg' is not a plot format; end the name in .png, .svg, .pdf"),
    ("x", "no extension is not a plot format"),
    ("x.png.gz", "extension '.gz'"),
])
def test_an_unsupported_plot_extension_is_one_line_before_any_work(tmp_path, capsys, no_work,
                                                                   cmd, name, needle):
    code = main([*cmd, "--plot", str(tmp_path / name)])
    out = capsys.readouterr()
    assert code == 2 and out.out == "" and out.err.count("\n") == 1, out.err
    assert f"--plot {tmp_path / name}: {needle}" in out.err
    assert not list(tmp_path.iterdir())
