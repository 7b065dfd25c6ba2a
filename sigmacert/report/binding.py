"""The report's release and log sections (docs/release.md): what `sigmacert-verify --release` found about
the model files and the training manifest, and the certificate's inclusion in a log. Every value is
HTML-escaped text."""
from __future__ import annotations

from html import escape


def _t(x, n: int = 200) -> str:
    s = str(x)
    return escape(s if len(s) <= n else s[:n] + "...")


def release_section(res: dict) -> str:
    """res: verifier.release.ReleaseResult.as_dict()."""
    ok = res.get("result") == "ACCEPT"
    rows = [f"<tr><td>{_t(m['name'])}</td><td><code>{_t(m['sha256'])}</code></td>"
            f"<td>{'= manifest' if m.get('matches') else 'CHANGED'}</td></tr>" for m in res.get("model_files", [])]
    run = res.get("run") or {}
    claim = res.get("claim") or {}
    pairs = [("scheme", run.get("scheme"), claim.get("scheme") or str(claim.get("mechanism", ""))[7:]),
             ("M", run.get("steps"), claim.get("steps")), ("E", run.get("epochs"), claim.get("epochs")),
             ("sigma", run.get("sigma"), claim.get("sigma")),
             ("steps done", run.get("steps_done"), None if claim.get("steps") is None
              else int(claim["steps"]) * int(claim["epochs"]))]
    runs = "".join(f"<tr><td>{_t(k)}</td><td>{_t(a)}</td><td>{_t(b)}</td><td>{'=' if a == b else 'DIFFERS'}</td></tr>"
                   for k, a, b in pairs)
    fails = "".join(f"<li><b>{_t(f['reason'])}</b>: {_t(f['detail'], 400)}</li>" for f in res.get("failures", []))
    return (f'<section id="release"><h2>Release binding: {"ACCEPT" if ok else "REJECT"}</h2>'
            "<p>The model-signing signature (model.sig) covers every file of the release directory; the training "
            "manifest (release.dsse.json, signed with the release key) names each model file's SHA-256 and the "
            f"run, which must be the certificate's claim. Release key id <code>{_t(res.get('release_keyid'))}</code>; "
            f"model card: {_t(res.get('card'))}.</p>"
            + (f"<ul>{fails}</ul>" if fails else "")
            + "<table><tr><th>model file</th><th>sha256</th><th></th></tr>" + "".join(rows) + "</table>"
            + "<table><tr><th></th><th>manifest run</th><th>certificate claim</th><th></th></tr>" + runs
            + "</table></section>")


def log_section(log: dict) -> str:
    """log: the --log-proof check {accepted, reason, detail, inclusion}."""
    inc = log.get("inclusion") or {}
    rows = "".join(f"<tr><td>{_t(k)}</td><td><code>{_t(inc.get(k))}</code></td></tr>"
                   for k in ("index", "size", "root", "time", "keyid"))
    return (f'<section id="log"><h2>Log inclusion: {"ACCEPT" if log.get("accepted") else "REJECT"}</h2>'
            f"<p>{_t(log.get('detail'), 400)}. The RFC 9162 inclusion proof leads from this certificate's leaf "
            "hash to the root of a tree head signed by the log's key.</p>"
            + (f"<table>{rows}</table>" if inc else "") + "</section>")
