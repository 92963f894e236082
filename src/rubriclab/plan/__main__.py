import sys

from rubriclab.plan import main

sys.exit(main())
