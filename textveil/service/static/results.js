// The results viewer: a results.json of `textveil evaluate` (textveil/evaluation/report.py) as
// tables and the risk-utility map, drawn here from the file's own numbers (intervals included, as
// the library wrote them: none is computed here). The readings follow
// textveil/evaluation/trainings.py: each attack under each training, and the risk at a point is
// the best top-1 over every attack and training.
"use strict";

const TRAINING_KEYS = { clean: "attacks", release: "attacks_release" };

function attackLines(point) {
  const held = Object.entries(TRAINING_KEYS).filter(([, key]) => point[key]).map(([training, key]) => [training, point[key]]);
  const attacks = [...new Set(held.flatMap(([, results]) => Object.keys(results)))];
  const lines = [];
  for (const attack of attacks) {
    for (const [training, results] of held) if (results[attack]) lines.push([attack, training, results[attack]]);
  }
  return lines;
}

function bestAttack(point) {
  let best = null;
  for (const [attack, training, result] of attackLines(point)) {
    if (!best || result.top1 > best.top1) best = { attack, training, top1: result.top1 };
  }
  return best;
}

function resultOf(point, attack, training) {
  return (point[TRAINING_KEYS[training]] || {})[attack] || null;
}

function linesOf(points) {
  const seen = new Map();
  for (const point of points) for (const [attack, training] of attackLines(point)) seen.set(`${attack}\u0000${training}`, [attack, training]);
  return [...seen.values()];
}

function lineLabel(attack, training) {
  return `${attack} (${training}-trained)`;
}

function inParameterOrder(points) {
  return [...points].sort((a, b) => {
    const an = a.parameter === null || a.parameter === undefined, bn = b.parameter === null || b.parameter === undefined;
    return an - bn || (a.parameter || 0) - (b.parameter || 0);
  });
}

function percent(value, digits) {
  return `${(100 * value).toFixed(digits === undefined ? 1 : digits)}%`;
}

function table(container, header, rows, numeric) {
  const element = document.createElement("table");
  const head = element.createTHead().insertRow();
  for (const cell of header) {
    const th = document.createElement("th");
    th.textContent = cell;
    head.appendChild(th);
  }
  const body = element.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    row.forEach((cell, index) => {
      const td = tr.insertCell();
      td.textContent = cell;
      if (numeric && index > 0 && /^[\d.\u2013-]/.test(cell)) td.className = "number";
    });
  }
  container.replaceChildren(element);
}

function summary(results) {
  const plan = results.plan;
  const items = [];
  const grid = plan.parameter ? `${plan.parameter} grid ${plan.grid.join(", ")}` : "no parameter to sweep (one release)";
  items.push(`mechanism ${plan.mechanism}, ${grid}${plan.include_unmodified ? " plus the unmodified text" : ""}, ` +
    `seed ${plan.seed}${plan.repeats > 1 ? `, ${plan.repeats} releases per value (mean ± sd)` : ""}` +
    Object.entries(plan.mechanism_options || {}).map(([k, v]) => `, ${k}=${v}`).join(""));
  if (plan.trainings) items.push(`attacks trained on: ${plan.trainings.join(" and ")}`);
  if (results.embeddings) items.push(`embeddings: ${results.embeddings.name} (${results.embeddings.dim} dims)`);
  for (const [role, info] of Object.entries(results.corpora || {})) {
    items.push(`${role.replace(/_/g, " ")}: ${info.name}, ${Number(info.documents).toLocaleString("en")} documents, ${info.labels} labels`);
  }
  if (results.timings && results.timings.total) items.push(`total time ${results.timings.total.toFixed(0)} s`);
  if (results.machine) items.push(`machine: ${results.machine.platform}, ${results.machine.cpus} CPUs, Python ${results.machine.python}`);
  if (results.created) items.push(`created ${results.created} by textveil ${results.textveil_version}`);
  const list = document.getElementById("summary");
  list.replaceChildren(...items.map((text) => {
    const li = document.createElement("li");
    li.textContent = text;
    return li;
  }));
}

function riskTable(results) {
  const points = results.points;
  const lines = linesOf(points);
  const tasks = Object.keys(points[0].utility || {}).filter((t) => t.startsWith("topic"));
  const header = [results.plan.parameter || "release"];
  for (const [attack, training] of lines) {
    const first = points.map((p) => resultOf(p, attack, training)).find((r) => r);
    header.push(`${lineLabel(attack, training)}: correct / ${first.n_unknown} (chance ${(first.chance[0] * first.n_unknown).toFixed(1)})`);
  }
  header.push("risk: best top-1 (attack, training)", ...BUDGET_HEADER);
  for (const task of tasks) header.push(`${task}: accuracy`);
  const rows = points.map((point) => {
    const row = [point.label];
    for (const [attack, training] of lines) {
      const r = resultOf(point, attack, training);
      row.push(r ? `${Math.round(r.top1 * r.n_unknown)} (${percent(r.top1)}${intervalText(r.top1_interval, true)}${r.top1_sd ? ` ± ${percent(r.top1_sd)}` : ""})` : "–");
    }
    const best = bestAttack(point);
    const bestResult = best && resultOf(point, best.attack, best.training);
    row.push(best ? `${percent(best.top1)}${intervalText(bestResult && bestResult.top1_interval, true)}: ${lineLabel(best.attack, best.training)}` : "–");
    const unmodified = point.parameter === null && point.label === "none";
    row.push(...(unmodified ? BUDGET_HEADER.map(() => "–") : budgetCells(point)));
    for (const task of tasks) row.push(utilityCell(point.utility[task]));
    return row;
  });
  table(document.getElementById("table-risk"), header, rows, true);
}

// A release's budget beside its risk, as textveil/privacy/release_budget.py words it: the epsilon
// per document (median and largest over the judged texts) for epsilon-DP, the epsilon per unit
// with its metric; a file written before the figures were kept reads "not recorded".
const BUDGET_HEADER = ["epsilon per document: median (largest)", "epsilon per unit (metric)"];
const WITHOUT_EPSILON = { none: "no bound", "l-privacy": "no epsilon (l-privacy)" };

function epsilonNumber(value) {
  return Number.isInteger(value) ? value.toLocaleString("en")
    : value.toLocaleString("en", { maximumSignificantDigits: 4 });
}

function budgetCells(point) {
  const budget = point.budget;
  if (!budget) return ["not recorded", "not recorded"];
  if (WITHOUT_EPSILON[budget.kind]) return [WITHOUT_EPSILON[budget.kind], WITHOUT_EPSILON[budget.kind]];
  const perDocument = budget.per_document;
  const document = perDocument
    ? (perDocument.median === perDocument.largest ? epsilonNumber(perDocument.median)
      : `${epsilonNumber(perDocument.median)} (largest ${epsilonNumber(perDocument.largest)})`)
    : (budget.kind === "metric" ? "no bound per document (metric privacy: see per unit)" : "not recorded");
  const unit = budget.per_unit === null || budget.per_unit === undefined ? "not recorded"
    : `${epsilonNumber(budget.per_unit)} per ${budget.unit || "unit"}${budget.metric ? `, ${budget.metric}` : ""}`;
  return [document, unit];
}

// A 95% interval as the library computed it (textveil/evaluation/intervals.py); nothing where the
// results were written without one.
function intervalText(found, asPercent) {
  if (!found) return "";
  const shown = (v) => (asPercent ? (100 * v).toFixed(1) : v.toFixed(3));
  return ` [${shown(found.low)}, ${shown(found.high)}]`;
}

function utilityCell(result) {
  if (!result) return "–";
  return result.value.toFixed(3) + intervalText(result.interval, false)
    + (result.sd !== undefined ? ` ± ${result.sd.toFixed(3)}` : "");
}

function utilityTable(results) {
  const points = results.points;
  const tasks = Object.keys(points[0].utility || {});
  const header = [results.plan.parameter || "release", ...tasks.map((t) => {
    const u = points[0].utility[t];
    const direction = `${u.higher_is_better ? "higher" : "lower"} is better`;
    // Older results.json files hold descriptions that already say which way is better: not twice.
    return `${t} (${u.metric.includes(direction) ? u.metric : `${u.metric}, ${direction}`})`;
  })];
  table(document.getElementById("table-utility"), header,
    points.map((p) => [p.label, ...tasks.map((t) => utilityCell(p.utility[t]))]), true);
}

function topkTable(results) {
  const rows = [];
  for (const point of results.points) {
    for (const [attack, training, result] of attackLines(point)) {
      const topk = result.topk || [result.top1];
      const at = (k) => topk[Math.min(k - 1, topk.length - 1)].toFixed(3);
      rows.push([point.label, attack, training, at(1), at(5), at(10), result.chance[0].toFixed(3)]);
    }
  }
  table(document.getElementById("table-topk"), [results.plan.parameter || "release", "attack", "trained on", "top-1",
    "top-5", "top-10", "chance top-1"], rows, true);
}

function riskUtilityMaps(results) {
  const points = inParameterOrder(results.points);
  const tasks = Object.keys(points[0].utility || {});
  const lines = linesOf(points);
  const attacks = [...new Set(lines.map(([attack]) => attack))];
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  for (const [attack, training] of lines) {
    const item = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = `swatch c${attacks.indexOf(attack) % 10}${training === "release" ? " dashed" : ""}`;
    item.append(swatch, lineLabel(attack, training));
    legend.appendChild(item);
  }
  if (lines.length > 1) {
    const item = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = "swatch dotted";
    item.append(swatch, "risk: best of all");
    legend.appendChild(item);
  }
  const maps = document.getElementById("maps");
  maps.replaceChildren();
  for (const task of tasks) {
    const width = 380, height = 300, left = 48, right = 14, top = 26, bottom = 42;
    const svg = svgElement("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": `risk-utility map: ${task}`, class: "risk-utility-map" });
    const xs = points.map((p) => p.utility[task].value);
    const ys = points.flatMap((p) => attackLines(p).map(([, , r]) => r.top1));
    let xLow = Math.min(...xs), xHigh = Math.max(...xs);
    const pad = (xHigh - xLow) * 0.08 || 0.05;
    xLow -= pad;
    xHigh += pad;
    const yHigh = Math.min(1, Math.max(...ys) * 1.08 || 1);
    const x = linearScale(xLow, xHigh, left, width - right);
    const y = linearScale(0, yHigh, height - bottom, top);
    for (const tick of niceTicks(0, yHigh, 5)) {
      svgElement("line", { x1: left, x2: width - right, y1: y(tick), y2: y(tick), class: "grid-line" }, svg);
      svgText(svg, left - 5, y(tick) + 4, formatNumber(tick, 2), { "text-anchor": "end" });
    }
    for (const tick of niceTicks(xLow, xHigh, 5)) {
      svgElement("line", { x1: x(tick), x2: x(tick), y1: top, y2: height - bottom, class: "grid-line" }, svg);
      svgText(svg, x(tick), height - bottom + 14, formatNumber(tick, 3), { "text-anchor": "middle" });
    }
    svgElement("line", { x1: left, x2: width - right, y1: height - bottom, y2: height - bottom, class: "axis" }, svg);
    svgElement("line", { x1: left, x2: left, y1: top, y2: height - bottom, class: "axis" }, svg);
    svgText(svg, width / 2, 14, task, { "text-anchor": "middle", "font-weight": "600" });
    svgText(svg, (left + width - right) / 2, height - 8, points[0].utility[task].metric || task, { "text-anchor": "middle" });
    svgText(svg, 12, (top + height - bottom) / 2, "risk: top-1 identification",
      { "text-anchor": "middle", transform: `rotate(-90 12 ${(top + height - bottom) / 2})` });
    for (const [attack, training] of lines) {
      const colour = `c${attacks.indexOf(attack) % 10}`;
      const held = points.filter((p) => resultOf(p, attack, training));
      const d = held.map((p, i) => `${i ? "L" : "M"}${x(p.utility[task].value).toFixed(1)},${y(resultOf(p, attack, training).top1).toFixed(1)}`).join("");
      svgElement("path", { d, class: `series ${colour}${training === "release" ? " release" : ""}` }, svg);
      for (const p of held) {
        const px = x(p.utility[task].value), py = y(resultOf(p, attack, training).top1);
        const dot = svgElement("circle", { cx: px, cy: py, r: 3, class: `${colour}${training === "release" ? " release" : ""}` }, svg);
        const title = svgElement("title", {}, dot);
        title.textContent = `${lineLabel(attack, training)} at ${p.label}: top-1 ${percent(resultOf(p, attack, training).top1)}, ${task} ${p.utility[task].value.toFixed(3)}`;
        svgText(svg, px + 4, py - 4, p.label, { class: "label" });
      }
    }
    if (lines.length > 1) {
      const d = points.map((p, i) => `${i ? "L" : "M"}${x(p.utility[task].value).toFixed(1)},${y(bestAttack(p).top1).toFixed(1)}`).join("");
      svgElement("path", { d, class: "risk" }, svg);
    }
    maps.appendChild(svg);
  }
}

function render(results, name) {
  if (!results || !results.plan || !Array.isArray(results.points) || !results.points.length) {
    throw new Error("this file is not a textveil results.json (it needs 'plan' and 'points')");
  }
  document.getElementById("report-title").textContent = `${name}: ${results.plan.mechanism}`;
  summary(results);
  riskUtilityMaps(results);
  riskTable(results);
  utilityTable(results);
  topkTable(results);
  document.getElementById("report").hidden = false;
}

async function fileChosen(event) {
  const file = event.target.files[0];
  const status = document.getElementById("results-status");
  if (!file) return;
  try {
    render(JSON.parse(await file.text()), file.name);
    status.textContent = `${file.name}: ${file.size.toLocaleString("en")} bytes`;
    status.className = "muted";
  } catch (error) {
    document.getElementById("report").hidden = true;
    status.textContent = `${file.name}: ${error.message}`;
    status.className = "error";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("results-file").addEventListener("change", fileChosen);
  document.body.dataset.ready = "true";
});
