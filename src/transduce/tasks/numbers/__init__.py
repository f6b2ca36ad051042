"""The demo: English number words to German ones, a model trained in minutes on a laptop
(``task``: the data and the task; ``demo``: the command's whole run)."""
