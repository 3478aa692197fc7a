// The release page: paste or upload text, pick a mechanism and its parameter (emp's slider sits
// beside its calibration curve), release, and see the release beside the original with the
// changed words highlighted, its guarantee in words, and downloads. Everything goes through the
// service's /v1 API; nothing leaves this machine.
"use strict";

const state = {
  health: null,
  mechanisms: [],
  calibrations: new Map(),
  response: null,
  inputs: [],
  format: "text",
  fileName: null,
};

const $ = (id) => document.getElementById(id);

function setStatus(message, isError) {
  const status = $("status");
  status.textContent = message || "";
  status.className = isError ? "error" : "muted";
}

async function api(path, options) {
  const headers = { ...((options && options.headers) || {}) };
  const token = $("token").value.trim();
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, { ...(options || {}), headers });
  let body = null;
  try {
    body = await response.json();
  } catch (error) {
    body = null;
  }
  if (!response.ok) {
    const detail = body && body.detail ? body.detail : response.statusText;
    const error = new Error(`${response.status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

// -- mechanisms and their parameters ---------------------------------------------------------

function currentMechanism() {
  return state.mechanisms.find((m) => m.name === $("mechanism").value);
}

async function loadMechanisms() {
  try {
    const listing = await api("/v1/mechanisms");
    state.mechanisms = listing.mechanisms;
  } catch (error) {
    setStatus(error.status === 401 ? "Enter the service's API token above, then reload the mechanisms." : error.message,
              true);
    return;
  }
  const select = $("mechanism");
  const previous = select.value;
  select.replaceChildren();
  for (const mechanism of state.mechanisms) {
    const option = document.createElement("option");
    option.value = mechanism.name;
    option.textContent = `${mechanism.name}: ${mechanism.guarantee_words}`;
    if (!mechanism.service.releases) {
      option.disabled = true;
      option.title = mechanism.service.reason;
      option.textContent += " (not here)";
    }
    select.appendChild(option);
  }
  select.value = previous && state.mechanisms.some((m) => m.name === previous) ? previous : "emp";
  setStatus("");
  await mechanismChanged();
}

function defaultValue(mechanism, parameter) {
  const grid = mechanism.grid || [];
  if (parameter.default !== null && parameter.default !== undefined) return parameter.default;
  if (mechanism.name === "emp") return 20;
  return grid.length ? grid[Math.floor(grid.length / 2)] : 1;
}

async function mechanismChanged() {
  const mechanism = currentMechanism();
  if (!mechanism) return;
  $("description").textContent = mechanism.description;
  $("guarantee-kind").textContent = mechanism.guarantee_words;
  const options = $("options");
  options.replaceChildren();
  const swept = mechanism.parameters.find((p) => p.name === mechanism.swept);
  $("swept").hidden = !swept;
  if (swept) {
    const grid = mechanism.grid.length ? mechanism.grid : [1, 50];
    const slider = $("slider");
    slider.min = Math.min(...grid);
    slider.max = Math.max(...grid);
    slider.step = swept.type === "int" ? 1 : 0.5;
    slider.value = defaultValue(mechanism, swept);
    $("slider-name").textContent = swept.name;
    $("slider-help").textContent = swept.help;
  }
  for (const parameter of mechanism.parameters) {
    if (parameter.name === mechanism.swept || parameter.name === "seed" || parameter.secret) continue;
    const label = document.createElement("label");
    label.title = parameter.help;
    label.append(`${parameter.name} `);
    let input;
    if (parameter.choices) {
      input = document.createElement("select");
      for (const choice of parameter.choices) {
        const option = document.createElement("option");
        option.value = option.textContent = choice;
        input.appendChild(option);
      }
      input.value = parameter.default;
    } else if (parameter.type === "bool") {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = Boolean(parameter.default);
    } else {
      input = document.createElement("input");
      input.type = parameter.type === "str" ? "text" : "number";
      input.value = parameter.default === null ? "" : parameter.default;
      input.size = 10;
    }
    input.dataset.parameter = parameter.name;
    input.dataset.type = parameter.type;
    label.appendChild(input);
    options.appendChild(label);
  }
  sliderMoved();
  await drawCalibration(mechanism);
}

function parameters() {
  const mechanism = currentMechanism();
  const values = {};
  if (mechanism.swept) {
    const swept = mechanism.parameters.find((p) => p.name === mechanism.swept);
    values[swept.name] = Number($("slider").value);
  }
  for (const input of $("options").querySelectorAll("[data-parameter]")) {
    const type = input.dataset.type;
    if (input.type === "checkbox") values[input.dataset.parameter] = input.checked;
    else if (input.value === "") continue;
    else if (type === "int" || type === "float") values[input.dataset.parameter] = Number(input.value);
    else values[input.dataset.parameter] = input.value;
  }
  return values;
}

// -- the calibration curve beside the slider --------------------------------------------------

async function drawCalibration(mechanism) {
  const figure = $("calibration");
  if (!mechanism.calibration) {
    figure.hidden = true;
    $("calibration-note").textContent = mechanism.calibration_note || (mechanism.swept
      ? `No calibration curve for ${mechanism.name}: the service does not release with it. Measure risk and utility with 'textveil evaluate'.`
      : "");
    return;
  }
  $("calibration-note").textContent = "";
  figure.hidden = false;
  const key = calibrationKey(mechanism);
  if (!state.calibrations.has(key)) {
    $("curve-caption").textContent = `Measuring what each ${mechanism.swept} does to words…`;
    try {
      state.calibrations.set(key, await api("/v1/calibrate", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ mechanism: mechanism.name, parameters: calibrationParameters(mechanism) }),
      }));
    } catch (error) {
      $("curve-caption").textContent = `Calibration failed: ${error.message}`;
      return;
    }
  }
  plotCalibration(state.calibrations.get(key));
}

// The curve's fixed parameters: emp's decoder, or every option the page shows but the swept one.
function calibrationParameters(mechanism) {
  const values = { ...parameters() };
  delete values[mechanism.swept];
  if (mechanism.name === "emp") return { decode: values.decode || "exact" };
  return values;
}

function calibrationKey(mechanism) {
  return `${mechanism.name}/${JSON.stringify(calibrationParameters(mechanism))}`;
}

// The server names the curves it measured (calibration.curves): "share" curves on the left
// axis (0 to 1), a "count" curve on the right one.
function plotCalibration(calibration) {
  const svg = $("curve");
  svg.replaceChildren();
  const width = 460, height = 230, left = 44, right = 44, top = 12, bottom = 36;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const points = calibration.points;
  const xs = points.map((p) => p[calibration.parameter]);
  const counts = calibration.curves.filter((c) => c.axis === "count");
  const maxCount = Math.max(points[0].draws, ...counts.flatMap((c) => points.map((p) => p[c.field])));
  const x = linearScale(Math.min(...xs), Math.max(...xs), left, width - right);
  const y = linearScale(0, 1, height - bottom, top);
  const y2 = linearScale(0, maxCount, height - bottom, top);
  for (const tick of niceTicks(0, 1, 4)) {
    svgElement("line", { x1: left, x2: width - right, y1: y(tick), y2: y(tick), class: "grid-line" }, svg);
    svgText(svg, left - 6, y(tick) + 4, formatNumber(tick, 2), { "text-anchor": "end" });
  }
  if (counts.length) {
    for (const tick of niceTicks(0, maxCount, 4)) {
      svgText(svg, width - right + 6, y2(tick) + 4, formatNumber(tick, 1), { "text-anchor": "start" });
    }
  }
  for (const tick of niceTicks(Math.min(...xs), Math.max(...xs), 6)) {
    svgElement("line", { x1: x(tick), x2: x(tick), y1: height - bottom, y2: height - bottom + 4, class: "axis" }, svg);
    svgText(svg, x(tick), height - bottom + 16, formatNumber(tick, 1), { "text-anchor": "middle" });
  }
  svgElement("line", { x1: left, x2: width - right, y1: height - bottom, y2: height - bottom, class: "axis" }, svg);
  svgElement("line", { x1: left, x2: left, y1: top, y2: height - bottom, class: "axis" }, svg);
  svgElement("line", { x1: width - right, x2: width - right, y1: top, y2: height - bottom, class: "axis" }, svg);
  svgText(svg, (left + width - right) / 2, height - 4, `${calibration.parameter} (per token)`, { "text-anchor": "middle" });
  const path = (values, scale) => values.map((v, i) => `${i ? "L" : "M"}${x(xs[i]).toFixed(1)},${scale(v).toFixed(1)}`).join("");
  for (const curve of calibration.curves) {
    const scale = curve.axis === "count" ? y2 : y;
    const values = points.map((p) => p[curve.field]);
    svgElement("path", { d: path(values, scale), class: curve.style }, svg);
    values.forEach((v, i) => svgElement("circle", { cx: x(xs[i]), cy: scale(v), r: 2.5, class: `dot-${curve.style}` }, svg));
  }
  if ("unchanged_in_vocabulary" in points[0]) {  // emp: the same share over in-vocabulary words, dashed
    const inVocabulary = points.map((p) => (p.unchanged_in_vocabulary === null ? p.unchanged_fraction : p.unchanged_in_vocabulary));
    svgElement("path", { d: path(inVocabulary, y), class: "in-vocabulary" }, svg);
  }
  svgElement("line", { id: "curve-marker", x1: 0, x2: 0, y1: top, y2: height - bottom, class: "marker" }, svg);
  svg.dataset.xLow = Math.min(...xs);
  svg.dataset.xHigh = Math.max(...xs);
  const colours = { unchanged: "Blue", substitutes: "Orange" };
  const described = calibration.curves.map((c) =>
    `${colours[c.style] || c.style}${c.axis === "count" ? " (right axis)" : ""}: ${c.label}`);
  if ("unchanged_in_vocabulary" in points[0]) described.push("dashed: the same over in-vocabulary words");
  $("curve-caption").textContent = `${described.join("; ")}; ${points[0].draws} draws. ` +
    `Tokens from ${calibration.tokens_from}, embeddings ${calibration.embeddings}.`;
  sliderMoved();
}

function interpolate(points, parameter, value, field) {
  if (value <= points[0][parameter]) return points[0][field];
  for (let i = 1; i < points.length; i++) {
    if (value <= points[i][parameter]) {
      const a = points[i - 1], b = points[i];
      const t = (value - a[parameter]) / (b[parameter] - a[parameter] || 1);
      return a[field] + t * (b[field] - a[field]);
    }
  }
  return points[points.length - 1][field];
}

function sliderMoved() {
  const value = Number($("slider").value);
  $("slider-value").textContent = formatNumber(value, 2);
  const mechanism = currentMechanism();
  const marker = document.getElementById("curve-marker");
  const calibration = mechanism ? state.calibrations.get(calibrationKey(mechanism)) : undefined;
  if (!marker || !calibration || !mechanism || !mechanism.calibration) {
    $("reading").textContent = "";
    return;
  }
  const svg = $("curve");
  const x = linearScale(Number(svg.dataset.xLow), Number(svg.dataset.xHigh), 44, 460 - 44);
  const clamped = Math.min(Math.max(value, Number(svg.dataset.xLow)), Number(svg.dataset.xHigh));
  marker.setAttribute("x1", x(clamped));
  marker.setAttribute("x2", x(clamped));
  const readings = calibration.curves.map((curve) => {
    const at = interpolate(calibration.points, calibration.parameter, value, curve.field);
    return curve.axis === "share" ? `about ${formatNumber(at * 100, 0)}% ${curve.reading}` : `about ${formatNumber(at, 1)} ${curve.reading}`;
  });
  $("reading").textContent = `At ${calibration.parameter} ${formatNumber(value, 2)}: ${readings.join("; ")} ` +
    `(over ${calibration.points[0].draws} releases). Smaller ${calibration.parameter}: more protection, more words changed.`;
}

// -- input -------------------------------------------------------------------------------

async function fileChosen() {
  const file = $("file").files[0];
  if (!file) return;
  const bytes = new Uint8Array(await file.arrayBuffer());
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    state.fileName = file.name;
    const lower = file.name.toLowerCase();
    state.format = lower.endsWith(".jsonl") || lower.endsWith(".ndjson") ? "jsonl" : lower.endsWith(".csv") ? "csv" : "text";
    $("text").value = state.format === "text" ? text : "";
    $("text").placeholder = state.format === "text" ? "" : `${file.name}: one text per record (field '${$("text-field").value}'); released as uploaded.`;
    setStatus(`${file.name} chosen (${bytes.length.toLocaleString("en")} bytes).`);
  } catch (error) {
    $("file").value = "";
    setStatus(`${file.name} is not valid UTF-8: save it as UTF-8 and choose it again.`, true);
  }
}

function clearFile() {
  $("file").value = "";
  state.fileName = null;
  state.format = "text";
  $("text").placeholder = "Paste text here, or upload a .txt or .jsonl file.";
}

// -- releasing --------------------------------------------------------------------------

function ledgerFields() {
  if (!state.health || !state.health.ledger) return {};
  const fields = { subject: $("subject").value.trim(), request_id: crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random() };
  if ($("dataset").value.trim()) fields.dataset = $("dataset").value.trim();
  return fields;
}

// The entity stage the page asks for (the service's default: placeholders).
function entityOptions() {
  return { operator: $("entities").value || "placeholder" };
}

// What rewrites the release after the mechanism: polish when its box is ticked (the service's parser reads it).
function thenSteps() {
  return $("polish").checked && !$("polish").disabled ? ["polish"] : [];
}

// What the entity stage replaced, as spans of the original text (offsets from the response).
function entitySpans(text, entities) {
  return (entities || [])
    .filter((entity) => entity.start >= 0 && entity.end <= text.length && entity.start < entity.end)
    .map((entity) => ({
      start: entity.start, end: entity.end, className: "entity",
      title: `${entity.type} \u2192 ${entity.replacement === "" ? "(dropped)" : entity.replacement}` +
        ` (score ${formatNumber(entity.score, 2)})`,
    }));
}

// The original with the replaced entities highlighted; where none was replaced, the changed words.
// (The changes count tokens of the text after the entity stage: once an entity is replaced they no
// longer line up with the original's tokens, so they are shown on the release only.)
function originalSpans(original, record, layout) {
  const entities = entitySpans(original, record.entities);
  return entities.length ? entities : changedSpans(original, record.changed, "original", layout);
}

async function release() {
  const mechanism = currentMechanism();
  if (!mechanism) return;
  const button = $("release");
  button.disabled = true;
  setStatus("Releasing…");
  try {
    const seed = $("seed").value.trim();
    const extra = ledgerFields();
    let response;
    const file = $("file").files[0];
    if (file && state.format !== "text") {
      const form = new FormData();
      form.append("file", file);
      form.append("mechanism", mechanism.name);
      form.append("parameters", JSON.stringify(parameters()));
      form.append("text_field", $("text-field").value || "text");
      form.append("entities", JSON.stringify(entityOptions()));
      form.append("then", thenSteps().join(","));
      for (const [key, value] of Object.entries(extra)) form.append(key, value);
      if (seed) form.append("seed", seed);
      response = await api("/v1/sanitize/upload", { method: "POST", body: form });
      state.inputs = response.inputs;
    } else {
      const text = $("text").value;
      const body = { texts: [text], mechanism: mechanism.name, parameters: parameters(), entities: entityOptions(),
                     then: thenSteps(), ...extra };
      if (seed) body.seed = Number(seed);
      response = await api("/v1/sanitize", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      state.inputs = [text];
    }
    state.response = response;
    showRelease();
    setStatus(response.replayed ? "This request was recorded before: its release is shown again, nothing spent."
      : `Released ${response.releases.length} text(s).`);
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    button.disabled = false;
  }
}

function showRelease() {
  const response = state.response;
  $("output").hidden = false;
  const picker = $("document");
  picker.replaceChildren();
  response.releases.forEach((_, index) => {
    const option = document.createElement("option");
    option.value = index;
    option.textContent = `document ${index + 1} of ${response.releases.length}`;
    picker.appendChild(option);
  });
  $("document-picker").hidden = response.releases.length < 2;
  showDocument(0);
  // The summary of every text, in the library's words (the command line prints the same lines).
  $("release-summary").replaceChildren(...response.summary_lines.map((line) => {
    const item = document.createElement("li");
    item.textContent = line.text;
    if (line.warning) item.className = "error";
    return item;
  }));
  const budget = response.budget;
  if (budget) {
    const parts = Object.entries(budget).map(([subject, remaining]) =>
      `${subject}: ${remaining === null ? "no cap" : `${formatNumber(remaining)} left`}`);
    const spent = response.spent && Object.keys(response.spent.subjects).length
      ? ` Spent now: ${Object.entries(response.spent.subjects).map(([s, a]) => `${s} ${formatNumber(a)}`).join(", ")} (${response.spent.unit}).`
      : "";
    $("budget").textContent = `Budget (dataset ${response.dataset}): ${parts.join("; ")}.${spent}`;
  } else {
    $("budget").textContent = "No budget ledger: this service does not count what releases spend.";
  }
}

function showDocument(index) {
  const response = state.response;
  const record = response.releases[index];
  const original = state.inputs[index] || "";
  const layout = record.guarantee.layout;
  renderHighlighted($("original"), original, originalSpans(original, record, layout));
  // A polished release is written anew from the mechanism's: its changes no longer line up with its words.
  const polished = (response.then || []).length > 0;
  renderHighlighted($("released"), record.text,
    polished ? [] : changedSpans(record.text, record.changed, "released", layout));
  const guarantee = record.guarantee;
  const perUnit = guarantee.epsilon === null ? "" : ` at epsilon ${formatNumber(guarantee.epsilon)} per ${guarantee.unit}`;
  // A mechanism that writes a new text (a language model's paraphrase) lists no token-by-token changes.
  const rewritten = record.changed.length === 0 && record.text.trim() !== original.trim();
  $("summary").textContent = polished ? `Released${perUnit}, then polished by the language model (no privacy cost).` :
    rewritten ? `Rewritten as a new text${perUnit}.` :
    `${record.changed.length} of ${guarantee.words_protected} ${guarantee.unit}s changed${perUnit}` +
    (record.words_unchanged_by_noise ? `; ${record.words_unchanged_by_noise} released as themselves` : "") + ".";
  $("guarantee").textContent = response.guarantees[index];
  $("guarantee").className = guarantee.kind === "none" ? "error" : "";
  const stage = response.entity_stage;
  const found = (record.entities || []).length;
  $("entity-summary").textContent = stage ? `${stage.summary}.` +
    (response.releases.length > 1 ? ` This document: ${found} replaced.` : "") : "";
  $("entity-summary").className = stage && stage.options.operator === "off" ? "error" : "muted";
}

function downloadJson() {
  const stem = (state.fileName || "release").replace(/\.[^.]+$/, "");
  downloadBlob(`${stem}.released.json`, "application/json", JSON.stringify(state.response, null, 2) + "\n");
}

function downloadText() {
  const stem = (state.fileName || "release").replace(/\.[^.]+$/, "");
  const texts = state.response.releases.map((r) => r.text);
  if (state.format === "jsonl") {
    downloadBlob(`${stem}.released.jsonl`, "application/x-ndjson",
      texts.map((text) => JSON.stringify({ [$("text-field").value || "text"]: text })).join("\n") + "\n");
  } else {
    downloadBlob(`${stem}.released.txt`, "text/plain", texts.join("\n\n") + "\n");
  }
}

async function start() {
  $("mechanism").addEventListener("change", mechanismChanged);
  $("slider").addEventListener("input", sliderMoved);
  $("options").addEventListener("change", async () => {
    sliderMoved();
    const mechanism = currentMechanism();
    if (mechanism && mechanism.calibration) await drawCalibration(mechanism);
  });
  $("file").addEventListener("change", fileChosen);
  $("clear-file").addEventListener("click", clearFile);
  $("release").addEventListener("click", release);
  $("document").addEventListener("change", () => showDocument(Number($("document").value)));
  $("download-json").addEventListener("click", downloadJson);
  $("download-text").addEventListener("click", downloadText);
  $("token-fields").addEventListener("submit", (event) => {
    event.preventDefault();
    loadMechanisms();
  });
  try {
    state.health = await api("/healthz");
  } catch (error) {
    setStatus(`The service does not answer: ${error.message}`, true);
    return;
  }
  $("token-fields").hidden = !state.health.token_required;
  const stage = state.health.entity_stage;
  if (stage && !stage.available) {  // not installed here: only "off" can release
    for (const option of $("entities").options) option.disabled = option.value !== "off";
    $("entities").value = "off";
    $("entities-note").textContent = stage.reason;
    $("entities-note").className = "error";
  }
  const polish = state.health.polish;
  if (polish && !polish.available) {  // no language model here: the box cannot be ticked
    $("polish").disabled = true;
    $("polish-note").textContent = polish.reason;
  }
  $("ledger-fields").hidden = !state.health.ledger;
  $("text").maxLength = state.health.limits.max_text_chars;
  await loadMechanisms();
  const ready = state.health.language_models_ready || [];
  if (ready.length && !$("status").textContent) setStatus(`Language model ready: ${ready.join(", ")} (loaded at start-up).`, false);
  document.body.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", start);
