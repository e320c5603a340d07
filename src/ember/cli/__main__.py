"""`python -m ember.cli`: the `ember` command."""

import sys

from ember.cli import main

sys.exit(main())
