import os
import stat
import tempfile

import pytest

from tests.helpers.processes import make_node
from transduce.errors import UserError
from transduce.io import atomic_directory, atomic_path, check_writable, remove_staging, write_text


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_replace_that_fails_names_the_file_asked_for(tmp_path):
    folder = tmp_path / "taken"
    (folder / "inside").mkdir(parents=True)  # a folder, not empty, where the file should go
    with pytest.raises(OSError) as caught:
        with atomic_path(folder) as tmp:
            tmp.write_text("new")
    assert caught.value.filename == str(folder) and ".tmp" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_success_replaces_the_file(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    write_text(target, "new")
    assert target.read_text() == "new"


def _with_umask(mask, action):
    old = os.umask(mask)
    try:
        return action()
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_open_would_give(tmp_path, mask, mode):
    target = tmp_path / "out.txt"
    _with_umask(mask, lambda: write_text(target, "x"))
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_replacing_a_file_keeps_its_mode(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    _with_umask(0o077, lambda: write_text(target, "new"))
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_staged_directory_gets_mkdirs_mode_and_appears_whole(tmp_path):
    target = tmp_path / "export"

    def build():
        with atomic_directory(target) as tmp:
            (tmp / "a").write_text("a")
            assert not target.exists()

    _with_umask(0o022, build)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and (target / "a").read_text() == "a"
    with pytest.raises(RuntimeError):
        with atomic_directory(tmp_path / "other"):
            raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_staging_left_by_a_killed_writer_is_swept_and_nothing_else(tmp_path):
    keep = ["step_3.pt", ".hidden", "notes.tmp", ".x.tmp", "my.step_3.pt.abcdefgh.tmp"]
    for name in keep:
        (tmp_path / name).write_text("")
    fd, staged = tempfile.mkstemp(prefix=".step_3.pt.", suffix=".tmp", dir=tmp_path)
    os.close(fd)
    folder = tempfile.mkdtemp(prefix=".spm.model.", suffix=".tmp", dir=tmp_path)
    other = tempfile.mkdtemp(prefix=".export.", suffix=".tmp", dir=tmp_path)
    removed = remove_staging(tmp_path, ("step_3.pt", "spm.model"))
    assert sorted(map(str, removed)) == sorted([staged, folder])
    remove_staging(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)
    assert not os.path.exists(other)


def test_check_writable_names_a_file_in_the_way(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="is a file where --run-dir needs a folder"):
        check_writable(tmp_path / "file" / "run", "--run-dir")
    assert check_writable(tmp_path / "new" / "run", "--run-dir") == tmp_path / "new" / "run"
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_recorded_path_is_relative_inside_the_root_and_a_name_outside(tmp_path):
    from transduce.io import recorded_path

    root = tmp_path / "repo"
    assert recorded_path(root / "configs" / "a.yaml", root) == "configs/a.yaml"
    assert recorded_path(tmp_path / "data" / "multi30k", root) == "multi30k"


def test_a_device_is_written_into_not_replaced(tmp_path):
    null = make_node(tmp_path / "null", 3)
    write_text(null, "thrown away")
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]  # no temporary left beside it


def test_a_full_device_reports_no_space_and_stays_a_device(tmp_path):
    full = make_node(tmp_path / "full", 7)
    with pytest.raises(OSError) as caught:
        write_text(full, "x" * 10_000)
    assert caught.value.errno == 28  # ENOSPC
    assert stat.S_ISCHR(full.stat().st_mode)


def test_a_named_pipe_is_written_into_not_replaced(tmp_path):
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_link_is_written_through_to_its_target(tmp_path):
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old")
    link.symlink_to(real.name)  # relative, as links usually are
    write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert real.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]
