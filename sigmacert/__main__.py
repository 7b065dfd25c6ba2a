"""`python -m sigmacert` is the `sigmacert` command."""
import sys

from sigmacert.cli import main

sys.exit(main())
