import sys

from gpu_service.daemon import main

sys.exit(main())
