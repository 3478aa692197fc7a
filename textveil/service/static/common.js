// Helpers both pages share: SVG drawing, and the tokenisation the highlights follow.
// No framework, no build step, nothing loaded from elsewhere.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgElement(name, attributes, parent) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, String(value));
  if (parent) parent.appendChild(element);
  return element;
}

function svgText(parent, x, y, text, attributes) {
  const element = svgElement("text", { x, y, ...(attributes || {}) }, parent);
  element.textContent = text;
  return element;
}

function linearScale(domainLow, domainHigh, rangeLow, rangeHigh) {
  const span = domainHigh - domainLow || 1;
  return (value) => rangeLow + ((value - domainLow) / span) * (rangeHigh - rangeLow);
}

function niceTicks(low, high, count) {
  const span = high - low || 1;
  const raw = span / Math.max(1, count);
  const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let value = Math.ceil(low / step) * step; value <= high + step * 1e-9; value += step) {
    ticks.push(Math.round(value / step) * step);
  }
  return ticks;
}

function formatNumber(value, digits) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  return Number(value).toLocaleString("en", { maximumFractionDigits: digits === undefined ? 3 : digits });
}

// textveil's tokens (textveil/text/tokenize.py): a word is a run of letters or digits joined by
// apostrophes; whitespace runs and single other characters are tokens of their own.
const TOKEN_PATTERN = /([\p{L}\p{N}]+(?:['\u2019][\p{L}\p{N}]+)*)|(\s+)|([\s\S])/gu;

function tokenizeText(text) {
  const tokens = [];
  for (const match of text.matchAll(TOKEN_PATTERN)) {
    const kind = match[1] !== undefined ? "word" : match[2] !== undefined ? "space" : "other";
    tokens.push({ text: match[0], start: match.index, end: match.index + match[0].length, kind });
  }
  return tokens;
}

function wordKey(text) {
  return text.replace(/\u2019/g, "'").toLowerCase();
}

// The tokens a Release's `changed[].token` counts, per layout: in the public layout words and
// marks (whitespace dropped); with `layout: keep` every token, whitespace included.
function positionedTokens(text, layout) {
  const tokens = tokenizeText(text);
  return layout === "keep" ? tokens : tokens.filter((token) => token.kind !== "space");
}

// Spans of `text` to highlight for the changed tokens: each change's token is looked for at its
// own position first, then at the nearest position holding the expected word (a dropped word
// shifts positions), never twice. A bag of words has no positions: its words are matched by value.
function changedSpans(text, changes, side, layout) {
  const tokens = positionedTokens(text, layout === "bag" ? "public" : layout);
  const used = new Set();
  const spans = [];
  const lowered = wordKey(text);
  let cursor = 0;
  const wanted = (change) => wordKey(side === "original" ? change.from : change.to);
  for (const change of changes) {
    const target = wanted(change);
    let found = -1;
    if (layout !== "bag") {
      for (let distance = 0; distance < tokens.length && found < 0; distance++) {
        for (const index of distance === 0 ? [change.token] : [change.token + distance, change.token - distance]) {
          if (index >= 0 && index < tokens.length && !used.has(index) && wordKey(tokens[index].text) === target) {
            found = index;
            break;
          }
        }
      }
    } else {
      found = tokens.findIndex((token, index) => !used.has(index) && wordKey(token.text) === target);
    }
    if (found >= 0) {
      used.add(found);
      spans.push({ start: tokens[found].start, end: tokens[found].end, change });
      continue;
    }
    // Not one token (a redacted URL, a placeholder): the text itself, after the last such match.
    const at = target ? lowered.indexOf(target, cursor) : -1;
    if (at >= 0) {
      spans.push({ start: at, end: at + target.length, change });
      cursor = at + target.length;
    }
  }
  spans.sort((a, b) => a.start - b.start);
  return spans.filter((span, index) => index === 0 || span.start >= spans[index - 1].end);
}

// Fill `container` with `text`, the spans wrapped in <mark> (text nodes only: nothing is parsed as HTML).
// A span shows its change ("from -> to") as its title, or its own `title`, and may carry a `className`.
function renderHighlighted(container, text, spans) {
  container.replaceChildren();
  let at = 0;
  for (const span of spans) {
    if (span.start < at) continue;
    container.appendChild(document.createTextNode(text.slice(at, span.start)));
    const mark = document.createElement("mark");
    mark.textContent = text.slice(span.start, span.end);
    mark.title = span.title !== undefined ? span.title : `${span.change.from} \u2192 ${span.change.to}`;
    if (span.className) mark.className = span.className;
    container.appendChild(mark);
    at = span.end;
  }
  container.appendChild(document.createTextNode(text.slice(at)));
}

function downloadBlob(name, type, content) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
