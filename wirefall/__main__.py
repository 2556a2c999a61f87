"""``python -m wirefall …``: the console command ``wirefall``."""
import gc
import sys

# no cyclic collection while the command's modules load: what they make lives to the end
# (frozen, as ui.cli.main freezes what its start-up made: the first collection after would walk it)
gc.disable()
from wirefall.ui.cli import main  # noqa: E402

gc.freeze()
gc.enable()
sys.exit(main())
