import sys

from kafkalite.cli.main import main

sys.exit(main())
