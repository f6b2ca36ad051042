import pytest

from transduce.io import atomic_path, write_text


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_success_replaces_the_file(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    write_text(target, "new")
    assert target.read_text() == "new"
