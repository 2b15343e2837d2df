"""``python -m eval.chunking``: the chunking suite's command line."""

from ._suite import main

raise SystemExit(main())
