"""Live preflight check against Lambda and SSM: the layers the functions use exist, and are current.

``check_layers_live`` reads each layer version of the endpoint's region (``GetLayerVersionByArn``) and, for the
Powertools layer, the latest version SSM publishes for its architecture and Python version.
"""

from __future__ import annotations

from collections.abc import Iterable

from .context import LAYER_ARN, POWERTOOLS_NAME, PreflightContext
from .findings import Finding, blocker, info, warning
from .live_errors import _NOT_FOUND, _error_code
from .offline import _layers


def check_layers_live(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.clients is None or ctx.region is None or ctx.partition is None:
        return
    client = ctx.clients.client("lambda", ctx.region)
    for where, arn in _layers(ctx):
        match = LAYER_ARN.match(arn or "")
        if arn is None or not match or match.group("region") != ctx.region:
            continue
        try:
            client.get_layer_version_by_arn(Arn=arn)
        except Exception as error:
            code = _error_code(error)
            if code in _NOT_FOUND:
                yield blocker(
                    "layer.present",
                    f"layer {arn} does not exist in {ctx.region}",
                    "every function using it fails to create",
                    "use a layer version published in the region",
                    where,
                )
            else:
                yield warning(
                    "layer.present",
                    f"layer {arn} could not be read ({code})",
                    "it may not exist here",
                    "allow lambda:GetLayerVersion, or check the layer in the console",
                    where,
                )
            continue
        yield info("layer.present", f"layer {arn} exists", subject=where)
        powertools = POWERTOOLS_NAME.match(match.group("name"))
        if powertools is None:
            continue
        name = (
            f"/aws/service/powertools/python/{powertools.group('arch')}/"
            f"{powertools.group('python')}.{powertools.group('minor')}/latest"
        )
        try:
            value = ctx.clients.client("ssm", ctx.region).get_parameter(Name=name)["Parameter"]["Value"]
        except Exception as error:
            yield info(
                "layer.latest",
                f"the latest Powertools layer could not be read from {name} ({_error_code(error)})",
                subject=where,
            )
            continue
        latest = LAYER_ARN.match(str(value))
        if latest and int(latest.group("version")) > int(match.group("version")):
            yield info(
                "layer.latest",
                f"Powertools layer version {latest.group('version')} is the latest in {ctx.region}; "
                f"the functions use {match.group('version')}",
                "newer layers carry fixes",
                "raise functions.POWERTOOLS_LAYER_VERSION after testing",
                where,
            )
