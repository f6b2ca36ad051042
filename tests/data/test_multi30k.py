"""`transduce data multi30k`: download path against a local HTTP server, and --from."""

import http.server
import threading
from functools import partial

import pytest

from tests.helpers.text import write_corpus
from transduce.cli.main import main
from transduce.data.multi30k import LANGUAGES, SPLITS


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A loopback HTTP server over tmp_path/www, stopped after the test."""
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_download_from_a_local_server(server, tmp_path, capsys):
    root, url = server
    write_corpus(root, compress=True)
    dest = tmp_path / "multi30k"
    assert main(["data", "multi30k", "--dest", str(dest), "--url", url]) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        f"{s}.{lang}" for s in SPLITS for lang in LANGUAGES
    )
    lines = (dest / "val.de").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1014 and lines[3] == "val de sentence 3 ü"


def test_a_short_download_is_an_error_and_writes_nothing(server, tmp_path, capsys):
    root, url = server
    write_corpus(root, compress=True, short_file="test_2016_flickr.fr")
    dest = tmp_path / "multi30k"
    assert main(["data", "multi30k", "--dest", str(dest), "--url", url]) == 2
    error = capsys.readouterr().err.strip()
    assert "test_2016_flickr.fr.gz: 999 lines, expected 1000" in error
    assert len(error.splitlines()) == 1
    assert list(dest.iterdir()) == []


def test_an_unreachable_server_is_a_one_line_error(tmp_path, capsys):
    dest = tmp_path / "multi30k"
    assert main(["data", "multi30k", "--dest", str(dest), "--url", "http://127.0.0.1:9"]) == 2
    assert "download failed" in capsys.readouterr().err
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize("compress", [False, True])
def test_copy_from_a_local_folder(tmp_path, compress):
    write_corpus(tmp_path / "local", compress)
    dest = tmp_path / "multi30k"
    assert main(["data", "multi30k", "--dest", str(dest), "--from", str(tmp_path / "local")]) == 0
    assert len((dest / "train.en").read_text(encoding="utf-8").splitlines()) == 29000


def test_a_missing_local_file_is_named(tmp_path, capsys):
    write_corpus(tmp_path / "local", compress=False)
    (tmp_path / "local" / "val.fr").unlink()
    assert (
        main(["data", "multi30k", "--dest", str(tmp_path / "d"), "--from", str(tmp_path / "local")])
        == 2
    )
    assert "has neither val.fr nor val.fr.gz" in capsys.readouterr().err
