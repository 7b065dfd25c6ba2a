// sigmacert service page: plain DOM, no libraries; every server value goes through textContent.
"use strict";
const $ = (id) => document.getElementById(id);
let watching = null, pollTimer = null, offset = 0, limit = 20;

function showError(msg) { $("error").textContent = msg || ""; }

async function api(method, path, body, auth) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (auth) headers["Authorization"] = "Bearer " + $("token").value.trim();
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined
                                : (typeof body === "string" ? body : JSON.stringify(body)) });
  let data = null;
  try { data = await r.json(); } catch (e) { data = { detail: "HTTP " + r.status }; }
  return { status: r.status, data };
}

function cell(tr, text, code) {
  const td = document.createElement("td");
  if (code) { const c = document.createElement("code"); c.textContent = text; td.appendChild(c); }
  else td.textContent = text == null ? "" : String(text);
  tr.appendChild(td);
  return td;
}

// the job's target in words: TV lambda, or the dp / tpr kind with its parameter (docs/targets.md)
function targetText(j) {
  const k = j.kind || { name: "tv" };
  if (k.name === "dp") return `(${k.epsilon}, ${j.target})-DP`;
  if (k.name === "tpr") return `TPR <= ${j.target} at FPR ${k.fpr}`;
  return `TV <= ${j.target}`;
}

// the run: M and E, or a run in stages as the CLI spells it (100x5,400x5; E is then the total)
function runText(j) {
  if (j.stages) return "stages " + j.stages.map((s) => `${s.steps}x${s.epochs}`).join(",");
  return `M=${j.steps}`;
}

// the form's target: TV lambda, or a dp (epsilon, delta) or tpr (fpr, tpr) target (docs/targets.md)
function kindFields(into) {
  const kind = $("kind").value;
  const names = { tv: ["target"], dp: ["epsilon", "delta"], tpr: ["fpr", "tpr"] }[kind];
  for (const k of names) into[k] = $(k).value.trim();
}

function showKind() {
  for (const k of ["tv", "dp", "tpr"]) $(`${k}-fields`).hidden = $("kind").value !== k;
}

// the form's run: stages replace M, E and T
function runFields(into) {
  const st = $("stages").value.trim();
  if (st) { into.stages = st; return; }
  into.steps = $("steps").value.trim();
  for (const k of ["epochs", "iterations"]) if ($(k).value.trim()) into[k] = $(k).value.trim();
}

function renderJob(j) {
  $("job").hidden = false;
  $("job-id").textContent = j.id;
  $("job-status").textContent = j.status;
  $("job-stage").textContent = j.status === "running" && j.stage
    ? `${j.stage} ${Number(j.percent || 0).toFixed(0)} %, ${Number(j.elapsed || 0).toFixed(1)} s` : "";
  $("job-progress").value = j.status === "done" ? 100 : (j.status === "running" ? Number(j.percent || 0) : 0);
  let detail = `${j.scheme} ${runText(j)} E=${j.epochs}` + (j.iterations ? ` (T=${j.iterations})` : "")
    + ` target ${targetText(j)}` + (j.sigma ? ` sigma ${j.sigma}` : "");
  const what = (j.kind && j.kind.name !== "tv") ? `${targetText(j)}: bound` : "TV <=";
  if (j.status === "done") detail += ` : certified ${what} ${j.bound} (key ${String(j.keyid).slice(0, 12)}...)`;
  if (j.reason) detail += ` : ${j.reason}`;
  $("job-detail").textContent = detail;
  const done = j.status === "done", base = `/v1/certificates/${encodeURIComponent(j.id)}`;
  const dl = $("job-download"), link = $("job-report-link"), frame = $("job-report");
  dl.hidden = link.hidden = frame.hidden = !done;
  if (done) {
    dl.href = `${base}/envelope`; dl.download = `${j.id}.json`; link.href = `${base}/report`;
    // the report is the server's own page (sigmacert report), shown as it is
    if (frame.getAttribute("src") !== `${base}/report`) frame.setAttribute("src", `${base}/report`);
  } else frame.removeAttribute("src");
  $("job-cancel").hidden = !(j.status === "queued" || j.status === "running");
}

async function poll() {
  if (!watching) return;
  const { status, data } = await api("GET", `/v1/certificates/${encodeURIComponent(watching)}`);
  if (status !== 200) { showError(data.detail); return; }
  renderJob(data);
  if (data.status === "queued" || data.status === "running") pollTimer = setTimeout(poll, 1000);
  else loadArchive();
}

function watch(id) {
  watching = id;
  clearTimeout(pollTimer);
  if (location.hash !== "#" + id) history.replaceState(null, "", "#" + id);  // the detail view's address
  poll();
}

function fromAddress() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (/^c[0-9a-f]{1,62}$/.test(id) && id !== watching) { watch(id); $("job").scrollIntoView(); }
}

async function submitRequest(ev) {
  ev.preventDefault();
  showError("");
  sessionStorage.setItem("sigmacert-token", $("token").value);
  const body = { scheme: $("scheme").value };
  kindFields(body);
  runFields(body);
  if ($("sigma").value.trim()) body.sigma = $("sigma").value.trim();
  const { status, data } = await api("POST", "/v1/certificates", body, true);
  if (status !== 200 && status !== 202) { showError(`${status}: ${data.detail}`); return; }
  watch(data.id);
  loadArchive();
}

async function cancelJob() {
  const { status, data } = await api("DELETE", `/v1/certificates/${encodeURIComponent(watching)}`, undefined, true);
  if (status !== 200) showError(`${status}: ${data.detail}`);
  poll();
}

async function lookupSigma() {
  showError("");
  const run = {};
  runFields(run);
  kindFields(run);
  const q = new URLSearchParams({ ...run, scheme: $("scheme").value });
  $("sigma-result").textContent = "computing...";
  const { status, data } = await api("GET", "/v1/sigma?" + q);
  if (status !== 200 && status !== 202) { $("sigma-result").textContent = ""; showError(`${status}: ${data.detail}`); return; }
  const closed = data.closed_form ? `closed-form sigma ${data.closed_form} (a proven bound, rounded up); ` : "";
  $("sigma-result").textContent = `${closed}exact sigma `
    + (data.exact ? data.exact : `${data.exact_status} (try again shortly)`);
  if (data.exact) $("sigma").value = data.exact;
}

async function loadArchive(ev) {
  if (ev) { ev.preventDefault(); offset = 0; }
  const q = new URLSearchParams({ limit: String(limit), offset: String(offset) });
  for (const [k, id] of [["steps", "f-steps"], ["epochs", "f-epochs"], ["target", "f-target"], ["stages", "f-stages"]])
    if ($(id).value.trim()) q.set(k, $(id).value.trim());
  const { status, data } = await api("GET", "/v1/certificates?" + q);
  if (status !== 200) { showError(`${status}: ${data.detail}`); return; }
  const tb = $("archive-body");
  tb.replaceChildren();
  for (const j of data.items) {
    const tr = document.createElement("tr");
    const a = document.createElement("a");
    a.href = "#" + j.id; a.textContent = j.id;
    a.addEventListener("click", (e) => { e.preventDefault(); watch(j.id); $("job").scrollIntoView(); });
    const td = document.createElement("td"); td.appendChild(a); tr.appendChild(td);
    const tgt = (j.type === "audit" ? "audit of a claim: " : "") + ((j.kind && j.kind.name !== "tv") ? targetText(j) : j.target);
    const m = j.stages ? runText(j) : j.steps;
    for (const v of [j.status, j.scheme, m, j.epochs, tgt, j.sigma, j.bound, j.created_at]) cell(tr, v);
    const last = cell(tr, "");
    if (j.status === "done") {
      const d = document.createElement("a");
      d.href = `/v1/certificates/${encodeURIComponent(j.id)}/envelope`; d.download = `${j.id}.json`; d.textContent = "file";
      last.appendChild(d);
    }
    tb.appendChild(tr);
  }
  $("archive-info").textContent = `${data.total ? offset + 1 : 0}-${offset + data.items.length} of ${data.total}`;
  $("prev").disabled = offset === 0;
  $("next").disabled = data.next_offset == null;
}

async function verifyFile() {
  const f = $("verify-file").files[0];
  if (!f) return;
  const out = $("verify-result");
  out.className = ""; out.textContent = "verifying...";
  const text = await f.text();
  const { status, data } = await api("POST", "/v1/verify", text);
  if (status !== 200) { out.textContent = `${status}: ${data.detail}`; return; }
  out.className = data.accepted ? "accept" : "reject";
  out.textContent = `${data.result} (${data.reason}): ${data.detail}`
    + (data.replayed_bound ? `\nreplayed bound on TV: ${data.replayed_bound}` : "")
    + (data.keyid ? `\nsigned by key ${data.keyid}` : "");
}

async function loadKeys() {
  const { status, data } = await api("GET", "/v1/keys");
  if (status === 200) $("issuer-key").textContent = data.keys.map((k) => `${k.keyid} (${k.status})`).join(", ");
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem("sigmacert-token") || "";
  $("request-form").addEventListener("submit", submitRequest);
  $("lookup").addEventListener("click", lookupSigma);
  $("kind").addEventListener("change", showKind);
  showKind();
  $("job-cancel").addEventListener("click", cancelJob);
  $("archive-form").addEventListener("submit", loadArchive);
  $("prev").addEventListener("click", () => { offset = Math.max(0, offset - limit); loadArchive(); });
  $("next").addEventListener("click", () => { offset += limit; loadArchive(); });
  $("verify-file").addEventListener("change", verifyFile);
  window.addEventListener("hashchange", fromAddress);
  loadKeys();
  loadArchive();
  fromAddress();
});
