"""`python -m certifier` is the `sigmacert` command."""
import sys

from certifier.cli import main

sys.exit(main())
