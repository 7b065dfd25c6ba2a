"""The cost model's feature of a service request: the plan `certify` runs first (certifier.plan_cost through the
door), and the former admission's keys.

    p = request_plan(req)     # Plan: each side's planned seconds and method, M, E, the target
"""
from __future__ import annotations

from certifier import door
from certifier.door import Plan, predicted_seconds, predicted_seconds_product, tv_plan
from service.job import request_run, request_target

__all__ = ["Plan", "kind_key", "predicted_seconds", "predicted_seconds_product", "request_plan", "tv_plan"]


def kind_key(req: dict) -> tuple:
    """The request's target kind as a hashable key: () for tv, ("dp", ("epsilon", text)) for dp."""
    k = req.get("kind")
    return () if not k else (k["name"], next((n, v) for n, v in k.items() if n != "name"))


def request_plan(req: dict) -> Plan:
    """The Plan of a service request (service.validate's shape) at its sigma (none: the exact sigma)."""
    return door.plan(request_run(req), request_target(req), req.get("sigma"))
