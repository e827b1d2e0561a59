"""``python -m sagemaker_llm_cdk.preflight --config FILE [--region R] [--offline]``: see
``sagemaker_llm_cdk.preflight``."""

import sys

from . import main

sys.exit(main())
