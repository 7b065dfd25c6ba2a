"""The report page: one self-contained HTML file (inline CSS and SVG, no script, no URL).

Everything taken from a certificate is HTML-escaped and shortened, and appears as text only;
no attribute carries certificate data. A Content-Security-Policy forbids every fetch.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import singledispatch
from html import escape

from certifier import door
from sigmacert.kinds import claim_statement
from sigmacert.report.facts import Facts

CSP = "default-src 'none'; style-src 'unsafe-inline'"
MAX_TEXT = 400  # characters shown of any one string from a certificate

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1a1a1a;
 max-width:920px;margin:0 auto;padding:0 18px 40px}
h1{font-size:1.25em;margin:18px 0 6px;color:#444} h2{font-size:1.1em;margin:26px 0 8px;
 border-bottom:1px solid #ddd;padding-bottom:3px}
.verdict{border-radius:8px;padding:14px 18px;margin:8px 0 14px;border:3px solid}
.verdict .word{font-size:2.4em;font-weight:800;letter-spacing:.06em}
.accept{background:#e8f5ee;border-color:#1b7f4b;color:#0f4d2c}
.reject{background:#fdecea;border-color:#b3261e;color:#7a1610}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em;
 overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;margin:6px 0} th,td{border:1px solid #ccc;padding:4px 8px;
 text-align:left;vertical-align:top} th{background:#f3f3f3} td.num{font-variant-numeric:tabular-nums}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:6px 0} dt{font-weight:600}
dd{margin:0;overflow-wrap:anywhere}
figure{margin:14px 0 22px} figure svg{width:100%;max-width:700px;height:auto;display:block;margin:0 auto}
#plot-tv svg{max-width:none}
figcaption{font-size:.92em;color:#333;margin-top:4px} .note{color:#555;font-size:.92em}
.claimed{border:2px dashed #b3261e;padding:4px 12px;border-radius:6px}
svg *{stroke-linejoin:round;stroke-linecap:butt}
@page{size:A4;margin:14mm}
@media print{body{font-size:10pt;max-width:none;padding:0}
 .verdict{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 figure,table,dl,.verdict{break-inside:avoid} h2{break-after:avoid}}
"""

CAPTIONS = {
    "tv": "<b>Total variation against the noise multiplier.</b> Blue: the closed-form bound U(c<sub>E</sub>) "
          "of Theorem 3.3 (a proven bound, evaluated in floating point); orange: the exact TV of Theorem 4.1 "
          "(numerical, not certified; dots are the points computed, the line joins them); dashed: the "
          "target &lambda;; white square: the closed-form &sigma; of Corollary 3.4, where the bound meets "
          "&lambda;. Green &#9660;: the certified upper bound at &sigma;.",
    "tradeoff": "<b>True-positive rate of membership tests at a false-positive rate &alpha;</b> (log-log). "
                "Green &#9670;: the certified TPR bounds of the certificate (every test with FPR &alpha; has TPR at "
                "most this). Orange: the optimal (Neyman&ndash;Pearson) test on the Gaussian pair at &sigma; "
                "(numerical, Appendix B.4). Blue: the &chi;<sup>2</sup> bound &alpha; + &radic;(c<sub>E</sub>"
                "&alpha;(1&minus;&alpha;)) of Proposition B.2. Dashed: &alpha; + &lambda;, what TV &le; "
                "&lambda; alone allows. Grey: random guessing.",
    "epsilon": "<b>(&epsilon;, &delta;)-differential privacy.</b> Green &#9670;: the certified &epsilon; at each "
               "&delta; (both directions, from the same polynomial as the TV bound). Orange: the numerical "
               "&epsilon;(&delta;) of the Gaussian pair at &sigma; (the larger of the two hockey-stick "
               "divergences, Appendix B.4; not certified). The certified points lie on or just above it.",
}

CAPTIONS["profile"] = (
    "<b>The privacy profile &delta;(&epsilon;)</b> = max(&delta;<sub>Q&#8214;P</sub>, &delta;<sub>P&#8214;Q</sub>)"
    "(&epsilon;) of the Gaussian pair (log scale; Appendix B.4). Orange: the exact numerics at &sigma; (solid) and "
    "at &sigma;<sub>low</sub> (dotted), floating point with error estimates, not certified. Dashed: the target "
    "&delta;. Green &#9660;: the certified upper bound at the certificate's &epsilon; and &sigma;; red &#9650;: "
    "the certified lower bound at &sigma;<sub>low</sub> (two-sided), above the target.")
CAPTIONS["tradeoff-kind"] = (
    "<b>The trade-off curve</b>: the true-positive rate 1 &minus; T(&alpha;) of the best membership test at "
    "false-positive rate &alpha; (log-log; (7)). Orange: the exact numerics at &sigma; (solid) and at "
    "&sigma;<sub>low</sub> (dotted), not certified. Black &times;: the target. Green &#9660;: the certified "
    "upper bound at &sigma;; red &#9650;: the certified lower bound at &sigma;<sub>low</sub> (two-sided). Grey: "
    "random guessing.")

ZOOM = (" Red &#9650;: the certified lower bound at &sigma;<sub>low</sub>. Right: the same near &sigma; at the "
        "scale of the 10<sup>-6</sup> grid, relative to &lambda; &mdash; the exact curve crosses &lambda; between "
        "the two certified points, as the certificate proves: &sigma;<sub>low</sub> &lt; &sigma;<sub>&lambda;</sub> "
        "&le; &sigma;.")

TRUST = """
<ul>
<li><b>Certified</b> (a finite computation in FLINT ball and exact integer arithmetic that the independent
verifier has just replayed): the upper bound on TV at &sigma; (Lemma C.5), the lower bound at
&sigma;<sub>low</sub> (data processing), the &epsilon;(&delta;) rows and the TPR rows.</li>
<li><b>Trusted</b>: FLINT and python-flint (versions below), the mathematics of Lemma C.5 and of data
processing, and the reduction of Section 2: the Gaussian pair dominates every run of Algorithm 1 (DP-SGD with
random allocation, zero-out adjacency, per-record clipping to C, noise N(0, &sigma;<sup>2</sup>C<sup>2</sup>I),
public divisor B<sub>0</sub>, exactly E&middot;M updates, only the final model released). Also the holder of the
signing key, for having issued it.</li>
<li><b>Not certified</b>: the curves of the plots (the closed form is a proven bound evaluated in floating
point; the exact TV, the optimal test and &epsilon;(&delta;) are numerical), the certificate's
<code>numerics</code>, <code>issued_at</code> and <code>timings</code>.</li>
<li><b>Not covered</b>: that a given model was trained by Algorithm 1 with these M, E and &sigma;. A release
manifest (<code>sigmacert train --sign-key</code>) binds a model to a certificate.</li>
</ul>
"""


def _t(x) -> str:
    """Escaped, shortened text of any value from a certificate."""
    s = str(x)
    return escape(s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + "\u2026")


def _num(x: float) -> str:
    return "&ndash;" if math.isnan(x) else f"{x:.4g}"


def _accuracy(target: str) -> str:
    return str(Decimal("0.5") + Decimal(target) / 2)  # an exact decimal: the target is one


def _verdict(f: Facts) -> str:
    cls, lead = ("accept", "The independent verifier replayed this certificate and accepts it.") if f.accepted \
        else ("reject", "The independent verifier rejects this certificate. Do not rely on it.")
    return (f'<header id="verdict" class="verdict {cls}"><div class="word">{f.verdict}</div><p>{lead}</p>'
            f'<p><b>Reason</b> <code>{_t(f.reason)}</code>: {_t(f.detail)}</p></header>')


SCHEMES = {  # how each scheme samples, and the pair its certificate bounds (docs/method-v2.md §3)
    "random-allocation": ("balls and bins: in every epoch each record is used at one step chosen uniformly at "
                          "random", "TV(P<sub>M</sub><sup>&otimes;E</sup>, Q<sub>M</sub><sup>&otimes;E</sup>)"),
    "fixed-bins": ("each record is assigned once to one of the M bins, uniformly at random, and used whenever its "
                   "bin comes round, at most E times", "TV(P<sub>M</sub>, Q<sub>M</sub>) at &sigma;/&radic;E"),
}


def _stages_table(c: dict) -> str:
    """The stages of a run in stages (format v5), in the order listed: M_s, E_s and sigma_s."""
    rows = "".join(f"<tr><td class=num>{i}</td><td class=num>{_t(st.get('steps'))}</td><td class=num>"
                   f"{_t(st.get('epochs'))}</td><td class=num>{_t(st.get('sigma', c.get('sigma')))}"
                   f"{'' if 'sigma' in st else ' (shared)'}</td></tr>"
                   for i, st in enumerate(c["stages"], 1) if isinstance(st, dict))
    return ('<table id="stages"><tr><th>stage s</th><th>M<sub>s</sub> steps per epoch</th><th>E<sub>s</sub> '
            "epochs</th><th>&sigma;<sub>s</sub></th></tr>" + rows + "</table>")


class _Block:
    """How the page words a block's run: M, E and sigma (formats v1-v4)."""
    KEYS = ("steps", "epochs")   # the run's rows of a rejected certificate's claim

    @staticmethod
    def run(c: dict) -> str:
        """The run in words: M, E and sigma."""
        runs = f", {_t(c['iterations'])} iterations" if "iterations" in c else ""
        return (f"<b>M = {_t(c['steps'])}</b> steps per epoch,\n<b>E = {_t(c['epochs'])}</b> epochs{runs}, noise "
                f"multiplier <b>&sigma; = {_t(c['sigma'])}</b>")

    @staticmethod
    def after_claim(c: dict) -> str:
        """After the claim's first paragraph: nothing."""
        return ""

    @staticmethod
    def pair(scheme_pair: str) -> str:
        """The pair the TV claim bounds: the scheme's."""
        return scheme_pair

    @staticmethod
    def title(c: dict) -> str:
        return f"M={c.get('steps')}, E={c.get('epochs')}"

    @staticmethod
    def rows(c: dict) -> list:
        """(key, shown value) of the run in a rejected certificate's claim."""
        return [(k, c.get(k)) for k in _Block.KEYS]


class _Staged:
    """How the page words a run in stages (format v5): the stages, their total and the table."""

    @staticmethod
    def run(c: dict) -> str:
        """The run in words: the stages, their total epochs and their sigma (shared or each stage's own)."""
        st = [x for x in c["stages"] if isinstance(x, dict)]
        total = sum(x.get("epochs", 0) for x in st if isinstance(x.get("epochs"), int))
        own = any("sigma" in x for x in st)
        sigma = "each stage at its own noise multiplier &sigma;<sub>s</sub>" if own else \
            f"one noise multiplier <b>&sigma; = {_t(c['sigma'])}</b> shared by the stages"
        return (f"a <b>run in {len(st)} stages</b>, in the order listed (stage s: E<sub>s</sub> epochs of "
                f"M<sub>s</sub> steps, {total} epochs in all), {sigma}")

    @staticmethod
    def after_claim(c: dict) -> str:
        """After the claim's first paragraph: the stages table and the product pair."""
        return (_stages_table(c) + "<p>The pair of the run is the product of the stages' pairs, &prod;<sub>s</sub> "
                "P<sub>M<sub>s</sub></sub><sup>&otimes;E<sub>s</sub></sup> against &prod;<sub>s</sub> "
                "Q<sub>M<sub>s</sub></sub><sup>&otimes;E<sub>s</sub></sup> (Theorem 4.1 with a product in place of a "
                "power: E &Lambda;<sup>q</sup> = &prod;<sub>s</sub> F<sub>M<sub>s</sub>,&sigma;<sub>s</sub></sub>(q)"
                "<sup>E<sub>s</sub></sup>); its &chi;<sup>2</sup> is 1 + c = &prod;<sub>s</sub> (1 + c<sub>s</sub>)"
                "<sup>E<sub>s</sub></sup>, which the closed-form curves below use for c<sub>E</sub>.</p>")

    @staticmethod
    def pair(scheme_pair: str) -> str:
        """The pair the TV claim bounds: the product of the stages' pairs."""
        return "TV of the product pair"

    @staticmethod
    def title(c: dict) -> str:
        return f"stages {_stages_text(c['stages'])}"

    @staticmethod
    def rows(c: dict) -> list:
        """(key, shown value) of the run in a rejected certificate's claim: the stage list as the CLI spells it."""
        return [("stages", _stages_text(c["stages"]))]


def _shape(c: dict):
    """How the page words the claim's run: a run in stages (format v5; the verifier accepts its `stages` only as a
    list, and v1-v4 claims without one) or a block, as door.given_form reads the claim's `stages`."""
    return door.given_form(c.get("stages")).shape(_Block, _Staged)


MEANINGS = {  # what a point on each privacy curve means, in words (the kind's parameters, the target)
    "profile": lambda kind, target: (
        f"(&epsilon;, &delta;)-differential privacy with &epsilon; = {_t(kind['epsilon'])} and &delta; = "
        f"{_t(target)}, in both directions (adding or removing the record): for every set S of outputs, "
        "Pr[S with the record] &le; e<sup>&epsilon;</sup> Pr[S without] + &delta;, and the other way round."),
    "tradeoff": lambda kind, target: (
        f"an attacker who must say whether one target record was in the training data, and who may wrongly say "
        f"<q>in</q> for at most a fraction {_t(kind['fpr'])} of the records that were out (FPR &le; "
        f"{_t(kind['fpr'])}), finds at most a fraction {_t(target)} of the records that were in (TPR), whatever "
        "test it uses and whatever else it knows."),
}


def _claim_kind(f: Facts) -> str:
    """The claim of a dp or tpr certificate (format v4) in words."""
    c, kind = f.claim, f.kind
    how, _ = SCHEMES.get(f.scheme, ("see the statement below", ""))
    meaning = MEANINGS[f.curve](kind, c["target"])
    return f"""<section id="claim"><h2>The claim</h2>
<p>Training by DP-SGD with <b>{_t(f.scheme)}</b> sampling ({how}), \
{_shape(c).run(c)} (noise N(0, &sigma;<sup>2</sup>C<sup>2</sup>I) at
every step, C the clipping norm), {_t(c['adjacency'])} adjacency ({_t(c['mechanism'])}).</p>{_shape(c).after_claim(c)}
<p>Certified, target kind <b>{_t(kind['name'])}</b>: <b>{escape(claim_statement(kind, c['target']))}</b> for the
Gaussian pair of Section 2, which dominates every run of that training. The certificate's statement:
<q>{_t(c['statement'])}</q>.</p>
<p>What it means: {meaning}</p></section>"""


def _claim(f: Facts) -> str:
    if f.curve is not None:
        return _claim_kind(f)
    c = f.claim
    lam = _t(c["target"])
    how, pair = SCHEMES.get(f.scheme, ("see the statement below", "TV"))
    pair = _shape(c).pair(pair)
    return f"""<section id="claim"><h2>The claim</h2>
<p>Training by DP-SGD with <b>{_t(f.scheme)}</b> sampling ({how}), \
{_shape(c).run(c)} (noise N(0, &sigma;<sup>2</sup>C<sup>2</sup>I) at
every step, C the clipping norm), {_t(c['adjacency'])} adjacency ({_t(c['mechanism'])}).</p>{_shape(c).after_claim(c)}
<p>Certified: <b>{pair} &le; &lambda; = {lam}</b> for the Gaussian pair of Section 2, which dominates every run
of that training. The certificate's statement: <q>{_t(c['statement'])}</q>.</p>
<p>What it means: an attacker is given the trained model and must say whether one target record was in the
training data (in or out with probability &frac12; each). Whatever test it uses, whatever else it knows, it is
right with probability at most &frac12; + &lambda;/2 = <b>{escape(_accuracy(c['target']))}</b>. Equivalently,
every membership-inference test with false-positive rate &alpha; has true-positive rate at most &alpha; +
&lambda;; the certified rows below are sharper at small &alpha;.</p></section>"""


KIND_FUNCTIONAL = {  # the kind's functional and its target's name, in the tables (docs/targets.md)
    "dp": (lambda k: f"&delta;({_t(k['epsilon'])}) = max(&delta;<sub>Q&#8214;P</sub>, &delta;<sub>P&#8214;Q</sub>)"
                     f"({_t(k['epsilon'])})", "&delta;"),
    "tpr": (lambda k: f"TPR at FPR {_t(k['fpr'])}", "&beta;"),
}


def _kind_rows(f: Facts, numerical) -> list[str]:
    """The upper and lower rows of a dp or tpr certificate, then the other quantities (numerical)."""
    c, s = f.claim, f.sides
    name, target = KIND_FUNCTIONAL[s["kind"]["name"]]
    what = name(s["kind"])
    rows = [f"<tr><td>upper bound at &sigma; = {_t(c['sigma'])}</td><td class=num>{what} &le; {_t(s['upper'])} "
            f"&le; {target} = {_t(c['target'])}</td><td class=num>{_t(f.replayed_value)}</td></tr>",
            f"<tr><td>TV of the pair at &sigma; (what the upper method bounds)</td><td class=num>"
            f"TV &le; {_t(f.predicate.get('bound'))}</td><td class=num>{_t(f.replayed_bound)}</td></tr>"]
    if s["lower"] is not None:
        rows += [f"<tr><td>lower bound at &sigma;<sub>low</sub> = {_t(s['sigma_low'])}</td><td class=num>{what} "
                 f"&ge; {_t(s['lower'])} &gt; {target}</td><td class=num>{_t(f.replayed_value_lower)}</td></tr>",
                 f"<tr><td>the least &sigma; meeting the target</td><td class=num><b>{_t(s['sigma_low'])} &lt; "
                 f"&sigma; &le; {_t(c['sigma'])}</b></td><td></td></tr>"]
    rows += [f"<tr><td>{label} at &sigma; (numerical, not certified)</td><td class=num>{value}</td><td></td></tr>"
             for label, value in numerical]
    return rows


def _certified(f: Facts, comparisons: dict, numerical=()) -> str:
    p, c, r = f.predicate, f.claim, f.replayed_rows
    tv = f.curve is None
    rows = [f"<tr><td>upper bound at &sigma; = {_t(c['sigma'])}</td><td class=num>TV &le; {_t(p['bound'])} "
            f"&le; &lambda; = {_t(c['target'])}</td><td class=num>{_t(f.replayed_bound)}</td></tr>"] if tv else \
        _kind_rows(f, numerical)
    if f.two_sided and tv:
        lo = p["lower"]
        rows += [f"<tr><td>lower bound at &sigma;<sub>low</sub> = {_t(lo['sigma_low'])}</td><td class=num>TV &ge; "
                 f"{_t(lo['tv_lower'])} &gt; &lambda;</td><td class=num>{_t(f.replayed_lower)}</td></tr>",
                 f"<tr><td>the least &sigma; meeting &lambda;</td><td class=num><b>{_t(lo['sigma_low'])} &lt; "
                 f"&sigma;<sub>&lambda;</sub> &le; {_t(c['sigma'])}</b></td><td></td></tr>"]
    for d, row in f.epsilon_rows:
        mine = r.get(d, {})
        rows.append(f"<tr><td>(&epsilon;, &delta;)-DP at &delta; = {_t(d)}, both directions</td><td class=num>"
                    f"&epsilon; = {_t(row['epsilon'])}</td><td class=num>&delta;<sub>Q&#8214;P</sub> &le; "
                    f"{_t(mine.get('delta_qp'))}, &delta;<sub>P&#8214;Q</sub> &le; {_t(mine.get('delta_pq'))}"
                    "</td></tr>")
    table = ("<table><tr><th>quantity</th><th>certified</th><th>the verifier's own replay</th></tr>"
             + "".join(rows) + "</table>")
    if not f.two_sided:
        table += ("<p class=note>One-sided certificate: &sigma; is proven to meet the target, not to be the least "
                  "such &sigma; (no lower bound).</p>")
    if not f.tpr_rows:
        table += "<p class=note>No (&epsilon;, &delta;) and no TPR rows are certified.</p>"
    tv_col = (lambda a: f"<td class=num>{_num(comparisons[a][1])}</td>") if tv else (lambda a: "")
    tpr = "".join(f"<tr><td class=num>{_t(a)}</td><td class=num><b>{_t(row['tpr'])}</b></td><td class=num>"
                  f"{_t(r.get('tpr@' + a))}</td><td class=num>{_num(comparisons[a][0])}</td>{tv_col(a)}</tr>"
                  for a, row in f.tpr_rows)
    if tpr:
        table += ("<p>Every membership-inference test with false-positive rate &alpha; has true-positive rate at "
                  "most:</p><table><tr><th>FPR &alpha;</th><th>certified TPR bound</th><th>the verifier's "
                  "replay</th><th>&chi;<sup>2</sup> bound (Prop. B.2)</th>"
                  + ("<th>&alpha; + &lambda;</th>" if tv else "") + "</tr>" + tpr + "</table>")
    return f'<section id="certified"><h2>What is certified</h2>{table}</section>'


TV_FIGURE = "tv"   # the figure of TV against sigma (a TV certificate's first)


def _figures(svgs: dict, notes: dict, two_sided: bool) -> str:
    out = []
    for name, text in svgs.items():
        caption = CAPTIONS[name] + (ZOOM if name == TV_FIGURE and two_sided else "")
        note = f" <span class=note>{escape(notes[name])}</span>" if notes.get(name) else ""
        out.append(f'<figure id="plot-{name}">{inline_svg(text)}<figcaption>{caption}{note}'
                   "</figcaption></figure>")
    if notes.get("plots"):
        out.append(f"<p class=note>{escape(notes['plots'])}</p>")
    return '<section id="plots"><h2>Plots</h2>' + "".join(out) + "</section>"


def inline_svg(text: str) -> str:
    """An SVG document as an element of an HTML page: the namespace declarations are implied there."""
    return re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", text, count=2)


def _claimed(f: Facts) -> str:
    """A rejected certificate: what it claims when its signature checked, marked as not verified."""
    if f.statement is None:
        return ('<section id="claimed"><h2>Contents not read</h2><p>No signature by a given key checked, so the '
                "certificate's contents were not read (verify, then read). No plots are drawn.</p></section>")
    c, p = f.claim, f.predicate
    shown = _shape(c).rows(c) + [(k, c.get(k)) for k in ("sigma", "target", "mechanism", "adjacency")]
    rows = "".join(f"<dt>{k}</dt><dd class=mono>{_t(v)}</dd>" for k, v in shown)
    rows += f"<dt>scheme</dt><dd class=mono>{_t(f.scheme)}</dd><dt>bound</dt><dd class=mono>{_t(p.get('bound'))}</dd>"
    return ('<section id="claimed" class="claimed"><h2>What the certificate claims &mdash; NOT verified</h2>'
            f"<dl>{rows}</dl><p class=note>The signature checked, but the verifier rejected the contents. No plots "
            "are drawn: they would show numbers the verifier did not accept.</p></section>")


def _provenance(f: Facts, versions: dict) -> str:
    p = f.predicate
    items = [("certificate SHA-256", f'<span class=mono>{f.sha256}</span> ({f.size} bytes)')]
    if f.keyid:
        items.append(("signed by key id", f'<span class=mono>{_t(f.keyid)}</span> (checked against the given '
                      "public key)"))
    elif f.envelope_keyids:
        named, more = f.envelope_keyids[:4], len(f.envelope_keyids) - 4
        items.append(("key ids named (not checked)", "<span class=mono>" + ", ".join(map(_t, named))
                      + "</span>" + (f" and {more} more" if more > 0 else "")))
    if f.statement is not None and f.accepted:
        subj, method, sw = f.statement["subject"][0], p["method"], p.get("software", {})
        grid = ", ".join(f"{k} = {_t(method[k])}" for k in ("h", "eta", "cap", "prec") if k in method)
        items += [("issued at", f"{_t(p.get('issued_at'))} (recorded by the issuer, not certified)"),
                  ("subject", f"{_t(subj['name'])}, SHA-256 <span class=mono>{_t(subj['digest']['sha256'])}</span>"),
                  ("format", f"v{_t(f.format_version)}, {'two-sided' if f.two_sided else 'one-sided'}; method "
                   f"{_t(method['name'])} "
                   f"v{_t(method['version'])} ({grid})"),
                  ("issuer's software", ", ".join(f"{_t(k)} {_t(v)}" for k, v in sorted(sw.items())))]
    items += [("this report", ", ".join(f"{k} {v}" for k, v in versions.items())),
              ("check it yourself", "<code>sha256sum CERT.json</code>; <code>sigmacert-verify CERT.json --key "
               "PUBLIC.pem</code>")]
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return f'<section id="provenance"><h2>Issuer, software and this file</h2><dl>{dl}</dl></section>'


@singledispatch
def _stages_text(stages) -> str:
    """A stage list as the CLI spells it (100x5,400x5; a stage's own sigma as @sigma), from claimed data; claimed
    data that is no list, as it reads."""
    return str(stages)


@_stages_text.register(list)
def _listed_text(stages: list) -> str:
    """A claimed stage list as the CLI spells it."""
    return ",".join(f"{x.get('steps')}x{x.get('epochs')}" + (f"@{x['sigma']}" if "sigma" in x else "")
                    if isinstance(x, dict) else str(x) for x in stages)


def _title(f: Facts) -> str:
    c = f.claim
    cell = f" \u2014 {_shape(c).title(c)}, \u03c3={c.get('sigma')}" if f.accepted else ""
    return f"sigmacert report: {f.verdict}{_t(cell)}"


def page(f: Facts, svgs: dict, notes: dict, comparisons: dict, versions: dict, numerical=(), extra=()) -> str:
    """The whole page. svgs: name -> SVG document (accepted certificates only); notes: name -> remark;
    comparisons: FPR -> (chi-square bound, alpha + lambda); versions: component -> version; numerical:
    (label, value) rows of the other quantities of a dp or tpr certificate; extra: ready HTML sections
    (sigmacert.report.binding: the release and the log)."""
    body = [_verdict(f), *extra]
    if f.accepted:
        body += [_claim(f), _certified(f, comparisons, numerical), _figures(svgs, notes, f.two_sided)]
    else:
        body.append(_claimed(f))
    trust = TRUST
    if f.accepted and f.curve is not None:
        trust = TRUST.replace("the upper bound on TV at", "the upper bound on "
                              + KIND_FUNCTIONAL[f.kind["name"]][0](f.kind) + " at")
    body += [_provenance(f, versions), f'<section id="trust"><h2>What is trusted, what is not</h2>{trust}</section>']
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_title(f)}</title><style>{CSS}</style></head>\n<body><h1>sigmacert audit report</h1>\n"
            + "\n".join(body) + "\n</body></html>\n")
