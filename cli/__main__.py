"""`python -m kirin.cli`: how the add-on starts its backend (`... serve`)."""

import sys

from .main import main

sys.exit(main())
