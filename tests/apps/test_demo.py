"""apps.demo (``make sim``): the default demo passes on the golden model and on the RTL, and says so."""
import pytest

from apps import demo


@pytest.mark.parametrize("target", ["fsim", pytest.param("rtl", marks=pytest.mark.rtl)])
def test_default_demo_passes(target, capsys):
    assert demo.main(["--target", target]) == 0
    out = capsys.readouterr().out
    assert out.count(": PASS (equal to numpy: True)") == len(demo.DEMOS)
    assert out.rstrip().endswith("ALL PASS")
    assert f"target {target}" in out


def test_unknown_demo_is_refused(capsys):
    with pytest.raises(SystemExit):
        demo.main(["--demo", "mnist"])
    assert "invalid choice: 'mnist'" in capsys.readouterr().err
