"""One construct per concern of the BenchGen stack."""

from __future__ import annotations

from aws_cdk import CfnResource
from constructs import Construct


def set_logical_id(construct: Construct, logical_id: str) -> None:
    """Give a construct's CloudFormation resource a readable, stable logical id.

    The local cloud and the infra tests find resources in the synthesized template by these ids, so they
    must not change when a construct moves in the tree.
    """
    child = construct.node.default_child
    if not isinstance(child, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to rename")
    child.override_logical_id(logical_id)
