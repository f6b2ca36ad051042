"""`python -m transduce` is the `transduce` command."""

import sys

from transduce.cli.main import main

sys.exit(main())
