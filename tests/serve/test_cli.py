"""`transduce serve` on the command line: the address it listens on."""

import re
import socket
import subprocess
import sys
import urllib.request

from transduce.cli.main import main


def test_a_port_in_use_is_one_line_before_the_model_loads(trained_run, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(trained_run), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"transduce: error: --host 127.0.0.1 --port {port}: Address already in "
        "use; give another --port (0: any free one) or --host"
    ]  # no "using" line
    assert main(["serve", str(trained_run), "--host", "no-such-host.invalid"]) == 2
    assert "--host no-such-host.invalid: " in capsys.readouterr().err


def test_port_zero_serves_on_a_free_port_and_says_which(trained_run):
    process = subprocess.Popen(
        [sys.executable, "-m", "transduce", "serve", str(trained_run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = process.stdout.readline()  # printed once the model is loaded
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert url and int(url.group(1)) > 0, line
        with urllib.request.urlopen(url.group(0) + "health", timeout=30) as answer:
            assert answer.status == 200
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_precision_reaches_the_loader_and_an_export_refuses_it(
    trained_run, monkeypatch, capsys, tmp_path
):
    import transduce.cli.serve as serve
    from transduce.errors import UserError

    export = tmp_path / "export"  # what the loader reads an export by; refused before use
    export.mkdir()
    (export / "model.bin").write_bytes(b"")
    assert main(["serve", str(export), "--port", "0", "--precision", "int8"]) == 2
    assert "precision int8 is for our engine" in capsys.readouterr().err
    asked = []

    def spy(path, device, precision):
        asked.append(precision)
        raise UserError("loaded")  # no need to serve

    monkeypatch.setattr(serve, "load", spy)
    assert main(["serve", str(trained_run), "--port", "0", "--precision", "fp32"]) == 2
    assert asked == ["fp32"] and "loaded" in capsys.readouterr().err
