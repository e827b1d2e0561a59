"""Settings of an endpoint and the models it hosts, importable from one place: the endpoint's own settings
(``endpoint``: instance scaling, routing, data capture, VPC placement, instance pools), how a model's copies run
(``copies``), the model itself (``model``, its rules in ``model_rules``) and whether a model fits its endpoint
(``fit``).
"""

from __future__ import annotations

from .copies import CopyScaling as CopyScaling
from .copies import InstanceRequirements as InstanceRequirements
from .copies import Placement as Placement
from .endpoint import _CONTENT_TYPE as _CONTENT_TYPE
from .endpoint import _NVME_FAMILIES as _NVME_FAMILIES
from .endpoint import DataCapture as DataCapture
from .endpoint import EndpointOptions as EndpointOptions
from .endpoint import InstancePool as InstancePool
from .endpoint import InstanceScaling as InstanceScaling
from .endpoint import Routing as Routing
from .endpoint import RoutingStrategyName as RoutingStrategyName
from .endpoint import VpcPlacement as VpcPlacement
from .endpoint import _ami_problem as _ami_problem
from .endpoint import has_local_nvme as has_local_nvme
from .endpoint import pools_with_plan_problem as pools_with_plan_problem
from .fit import fit_problems as fit_problems
from .fit import requirements_on as requirements_on
from .model import _ARCHITECTURE as _ARCHITECTURE
from .model import _ECR_IMAGE as _ECR_IMAGE
from .model import _LMI_ALIAS as _LMI_ALIAS
from .model import DEFAULT_LMI_TAG as DEFAULT_LMI_TAG
from .model import ModelSpec as ModelSpec
from .model import _architecture_problem as _architecture_problem
from .model import _image_problem as _image_problem
from .model_rules import _DOWNLOADING_VARIABLES as _DOWNLOADING_VARIABLES
