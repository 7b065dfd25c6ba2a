"""A normalised request's run and target as the door's values (service.validate's shape: `stages` or steps,
epochs, scheme, iterations; `target` and, beside tv, `kind`)."""
from __future__ import annotations

from certifier import door


def request_run(req: dict) -> door.Run:
    """The request's run: its stages (a run in stages, format v5, at one shared sigma) or its block."""
    return door.given_form(req.get("stages")).pick(
        lambda: door.Run.block(req["steps"], req["epochs"], req.get("scheme", door.RANDOM_ALLOCATION),
                               req.get("iterations")),
        lambda listed: door.Run.composed([(s["steps"], s["epochs"]) for s in listed]))


def request_target(req: dict) -> door.Target:
    """The request's target: tv requests have no `kind` (target lambda), dp / tpr ones name theirs (target
    delta / the TPR bound)."""
    return door.from_json(req.get("kind"), req["target"])
