"""``python -m wirefall …``: the console command ``wirefall``."""
import sys

from wirefall.ui.cli import main

sys.exit(main())
