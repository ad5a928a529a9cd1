"""`pase-opt --help` lists each pass as a spec `-p` takes as it is: the help and the parser
agree (`pase-lower-spmd{devices=none}` was shown, and `-p` refused `none`)."""

from __future__ import annotations

import pytest
from xdsl.utils.arg_spec import parse_spec

from pase.tools.opt_main import pass_summary
from pase.universe import PASE


@pytest.mark.parametrize("name", sorted(PASE.all_passes))
def test_each_pass_as_help_shows_it_parses(name: str):
    pass_class = PASE.all_passes[name]()
    summary = pass_summary(pass_class)
    # (the spec's lines; its continuations are indented past the name, the summary by 6)
    spec = " ".join(line.strip() for line in summary.split("\n")
                    if len(line) - len(line.lstrip()) != 6)
    assert spec.startswith(name)
    pass_class.from_spec(parse_spec(spec))  # raises on a value the parser refuses


def test_an_option_without_default_is_shown_with_its_type():
    pass_class = PASE.all_passes["pase-lower-spmd"]()
    assert pass_summary(pass_class).split("\n")[:2] == ["  pase-lower-spmd",
                                                       "      optional: devices=<int>"]
    pass_class.from_spec(parse_spec("pase-lower-spmd{devices=4}"))


def test_the_batch_flags_help_says_a_static_batch_is_resized_too(
        capsys: pytest.CaptureFixture[str]):
    """`--batch` sizes a symbolic batch axis and resizes a static one where the graph allows
    it (`pase.frontend.onnx.static_batch`); its help said only the first."""
    from pase.tools.opt_main import PaseOptMain
    from pase.tools.pase_run import main as pase_run

    with pytest.raises(SystemExit):
        pase_run(["--help"])
    run_help = " ".join(capsys.readouterr().out.split())
    assert "symbolic batch axis (axis 0), or a new size for a static one" in run_help
    with pytest.raises(SystemExit):
        PaseOptMain(["--help"])
    opt_help = " ".join(capsys.readouterr().out.split())
    assert "symbolic batch axis (axis 0), or a new size for a static one" in opt_help
