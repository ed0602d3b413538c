"""``python -m htam_server``: run the language server on stdio (``--tcp HOST:PORT`` for TCP)."""

import sys

from htam_server.server import main

sys.exit(main())
