import sys

from ident3d.cli import main

sys.exit(main())
