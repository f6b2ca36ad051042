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
