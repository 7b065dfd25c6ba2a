"""The report as the certification service computes it: a sandboxed child of `sigmacert serve`.

    python -m sigmacert.report.served report MEMORY PARENT     # started by service.sandbox.run

`sigmacert serve` names this module as the service's report entry (service.config.Config.report_entry),
so the service itself never imports sigmacert. The child caps its address space before it reads
the certificate (service.sandbox.child), runs the independent verifier against the issuer's keys and
draws the same page and plots as `sigmacert report`.
"""
from __future__ import annotations

import base64
import sys


def report_task(payload: dict, progress) -> dict:
    """{"verdict", "reason", "detail", "sha256", "html", "svgs"} of one archived certificate."""
    from sigmacert.report import render
    stage = {"verifying": 10.0, "plotting": 50.0}
    r = render(base64.b64decode(payload["data"]), [p.encode() for p in payload["keys"]],
               progress=lambda s: progress(s, stage.get(s, 0.0), 0.0))
    return {"verdict": r.verdict, "reason": r.reason, "detail": r.detail, "sha256": r.sha256, "html": r.html,
            "svgs": dict(r.svgs)}


if __name__ == "__main__":
    from service.sandbox import child
    sys.exit(child(sys.argv[1:], {"report": report_task}))
