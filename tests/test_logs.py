from transduce.logs import progress


def test_progress_counts_fractions_as_whole_numbers_and_survives_overshoot(capsys):
    with progress(10, "training", "s") as bar:
        bar.update(2.6)
        assert "3/10" in str(bar)
        bar.update(9.0)  # past the total: tqdm drops the total; the bar must still draw
        assert "12/" in str(bar)
