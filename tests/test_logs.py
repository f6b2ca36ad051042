from transduce.logs import progress


def test_progress_counts_fractions_as_whole_numbers_and_survives_overshoot(capsys):
    with progress(10, "training", "s") as bar:
        bar.update(2.6)
        assert "3/10" in str(bar)
        bar.update(9.0)  # past the total: tqdm drops the total; the bar must still draw
        assert "12/" in str(bar)


def test_work_done_before_a_resume_does_not_count_towards_the_rate():
    with progress(100, "training", "s", initial=90) as bar:
        assert "90/100" in str(bar)
        assert bar.format_dict["rate"] is None  # not 90 seconds in no time
        bar.update(1)
        assert "91/100" in str(bar)


def test_without_a_terminal_each_redraw_and_each_message_is_a_line(capsys, tmp_path):
    """In a log file or pipe, carriage returns would run the redraws and the messages
    written between them together on one line."""
    from transduce.logs import setup_logging

    log = setup_logging(tmp_path, "train.log")
    with progress(3, "training", "step") as bar:
        bar.set_postfix(note="x" * 60)
        bar.update(1)
        log.info("step 1 val_mse 0.5")
        bar.set_postfix(note="x")  # a shorter redraw: tqdm pads it with spaces
        bar.update(2)
    err = capsys.readouterr().err
    assert "\r" not in err and " \n" not in err
    lines = err.splitlines()
    assert "step 1 val_mse 0.5" in lines
    assert all(line.startswith("training: ") for line in lines if "val_mse" not in line)
    assert lines[-1].startswith("training: 100%|██████████| 3/3")
