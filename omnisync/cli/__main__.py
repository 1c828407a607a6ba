"""``python -m omnisync.cli``: the same as the ``omnisync`` console script."""

from .main import main

raise SystemExit(main())
