// The flow page's script: reads flows from /api/flows (server-sent events) with the form's filters,
// lists them (newest first), draws who talks to whom (edges coloured by verdict) and shows a flow's
// details when its row is clicked. Every string from a flow (pod names, labels, summaries) reaches
// the page as text (textContent, attribute values), never as HTML.
/* global document, window, EventSource, fetch, URLSearchParams, history, location, setTimeout, clearTimeout */
'use strict';

const MAX_ROWS = 500;
const FIELDS = ['pod', 'namespace', 'label', 'verdict', 'protocol', 'port', 'drop_reason'];
const SVG = 'http://www.w3.org/2000/svg';

const form = document.getElementById('filters');
const tbody = document.querySelector('#flows tbody');
const statusEl = document.getElementById('status');
const errorEl = document.getElementById('error');
const countEl = document.getElementById('count');
const details = document.getElementById('details');
const map = document.getElementById('map');

let source = null;
let pending = [];
let timer = null;
let seen = new Set();
let edges = new Map();
let shown = 0;
let lost = 0;
let generation = 0;

/** An element with text children (strings become text nodes, never HTML). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof window.Node ? c : document.createTextNode(String(c)));
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function setStatus(text) {
  statusEl.textContent = text;
}

function showError(text) {
  errorEl.textContent = text;
  errorEl.hidden = !text;
}

function query() {
  const q = new URLSearchParams();
  for (const f of FIELDS) {
    const v = form.elements[f].value.trim();
    if (v) q.set(f, v);
  }
  return q;
}

function endpoint(s) {
  return s.port ? `${s.name}:${s.port}` : s.name;
}

function row(f) {
  const tr = el('tr', { class: f.verdict, 'data-uuid': f.uuid },
    el('td', {}, f.time.slice(11, 23)),
    el('td', { class: 'src' }, endpoint(f.source)),
    el('td', { class: 'dst' }, endpoint(f.destination)),
    el('td', {}, f.protocol),
    el('td', { class: 'verdict' }, f.verdict),
    el('td', {}, f.dropReason || f.eventType + (f.observationPoint ? ` ${f.observationPoint}` : '')),
    el('td', { class: 'summary' }, f.summary));
  tr.addEventListener('click', () => select(tr, f));
  return tr;
}

function select(tr, f) {
  for (const s of tbody.querySelectorAll('tr.selected')) s.classList.remove('selected');
  tr.classList.add('selected');
  const dl = el('dl');
  const add = (k, v, cls) => {
    if (v === '' || v === null || v === undefined || (Array.isArray(v) && v.length === 0)) return;
    dl.append(el('dt', {}, k), el('dd', cls ? { class: cls } : {}, Array.isArray(v) ? v.join('\n') : v));
  };
  add('verdict', f.verdict, `verdict-${f.verdict}`);
  add('drop reason', f.dropReason, 'drop-reason');
  add('time', f.time);
  add('event', [f.eventType, f.observationPoint, f.direction].filter(Boolean).join(' '));
  add('protocol', [f.protocol, f.tcpFlags].filter(Boolean).join(' '));
  add('policy match', f.policyMatch);
  add('is reply', f.isReply === null ? 'unknown' : String(f.isReply));
  for (const [name, s] of [['source', f.source], ['destination', f.destination]]) {
    add(name, endpoint(s), name);
    add(`${name} address`, s.ip);
    add(`${name} identity`, s.identity ? `${s.identity} (endpoint ${s.endpointId || '-'})` : '');
    add(`${name} labels`, s.labels);
    add(`${name} service`, s.service);
    add(`${name} workloads`, s.workloads);
    add(`${name} cluster`, s.cluster);
  }
  add('node', f.node);
  add('summary', f.summary);
  add('uuid', f.uuid);
  const parts = [el('h3', {}, f.verdict === 'DROPPED' ? `Dropped: ${f.dropReason}` : `${f.verdict} flow`), dl];
  if (f.verdict === 'DROPPED' && /POLICY/.test(f.dropReason) && f.source.labels.length && f.destination.labels.length) {
    const args = [...f.source.labels.map((l) => `-s ${l}`), ...f.destination.labels.map((l) => `-d ${l}`)];
    if (f.destination.port) args.push(`--dport ${f.destination.port}/${f.protocol}`);
    parts.push(el('p', {}, 'Which rules decide this flow:'), el('pre', { class: 'trace' }, `cellium policy trace ${args.join(' ')}`));
  }
  details.replaceChildren(...parts);
}

function edgeClass(e) {
  return e.dropped && e.forwarded ? 'mixed' : e.dropped ? 'drop' : 'fwd';
}

function drawMap() {
  const names = [...new Set([...edges.values()].flatMap((e) => [e.src, e.dst]))].sort();
  const cx = 300;
  const cy = 200;
  const r = names.length > 1 ? 150 : 0;
  const pos = new Map(names.map((n, i) => [n, { x: cx + r * Math.cos((2 * Math.PI * i) / names.length - Math.PI / 2), y: cy + r * Math.sin((2 * Math.PI * i) / names.length - Math.PI / 2) }]));
  const defs = svg('defs');
  for (const [cls, colour] of [['fwd', '#2e9d4b'], ['drop', '#d12f2f'], ['mixed', '#e08a00']]) {
    const m = svg('marker', { id: `arrow-${cls}`, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
    m.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: colour }));
    defs.append(m);
  }
  const children = [defs];
  for (const e of edges.values()) {
    const a = pos.get(e.src);
    const b = pos.get(e.dst);
    // from circle edge to circle edge, so the arrow shows; a pod talking to itself gets a dot
    const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
    const dx = ((b.x - a.x) / len) * 16;
    const dy = ((b.y - a.y) / len) * 16;
    const cls = edgeClass(e);
    const line = svg('line', { x1: a.x + dx, y1: a.y + dy, x2: b.x - dx, y2: b.y - dy, class: cls, 'marker-end': `url(#arrow-${cls})`, 'data-src': e.src, 'data-dst': e.dst, 'data-verdict': cls });
    line.append(svg('title', {}, `${e.src} → ${e.dst}: ${e.forwarded} forwarded, ${e.dropped} dropped`));
    children.push(line);
  }
  for (const n of names) {
    const p = pos.get(n);
    const g = svg('g', { class: 'node', 'data-name': n });
    g.append(svg('circle', { cx: p.x, cy: p.y, r: 14 }), svg('text', { x: p.x, y: p.y + 28, 'text-anchor': 'middle' }, n));
    children.push(g);
  }
  map.replaceChildren(...children);
}

function flush() {
  timer = null;
  const batch = pending;
  pending = [];
  if (batch.length === 0) return;
  const rows = document.createDocumentFragment();
  for (let i = batch.length - 1; i >= 0; i--) rows.append(row(batch[i]));
  tbody.prepend(rows);
  while (tbody.rows.length > MAX_ROWS) tbody.deleteRow(-1);
  for (const f of batch) {
    const key = `${f.source.name}\u0000${f.destination.name}`;
    const e = edges.get(key) || { src: f.source.name, dst: f.destination.name, forwarded: 0, dropped: 0 };
    if (f.verdict === 'DROPPED') e.dropped++;
    else e.forwarded++;
    edges.set(key, e);
  }
  shown += batch.length;
  countEl.textContent = String(shown);
  drawMap();
  setStatus(`live: ${shown} flows${lost ? `, ${lost} lost` : ''}`);
}

function take(f) {
  // a reconnect sends the stored flows again
  if (seen.has(f.uuid)) return;
  seen.add(f.uuid);
  if (seen.size > 50000) seen = new Set([...seen].slice(-10000));
  pending.push(f);
  timer ??= setTimeout(flush, 30);
}

async function connect() {
  const gen = ++generation;
  if (source) source.close();
  source = null;
  if (timer) clearTimeout(timer);
  timer = null;
  pending = [];
  seen = new Set();
  edges = new Map();
  shown = 0;
  lost = 0;
  tbody.replaceChildren();
  countEl.textContent = '0';
  drawMap();
  const q = query();
  history.replaceState(null, '', q.toString() ? `?${q}` : location.pathname);
  const check = await fetch(`api/check?${q}`);
  if (gen !== generation) return;
  if (!check.ok) {
    const body = await check.json().catch(() => ({ error: `HTTP ${check.status}` }));
    showError(body.error);
    setStatus('not following: fix the filter');
    return;
  }
  showError('');
  setStatus('connecting…');
  const es = new EventSource(`api/flows?${q}`);
  source = es;
  es.addEventListener('open', () => setStatus(`live: ${shown} flows`));
  es.addEventListener('flow', (ev) => take(JSON.parse(ev.data)));
  es.addEventListener('lost', (ev) => {
    lost += JSON.parse(ev.data).count;
  });
  es.addEventListener('failure', (ev) => showError(JSON.parse(ev.data).error));
  es.addEventListener('error', () => setStatus('disconnected: retrying…'));
}

form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  void connect();
});
document.getElementById('clear').addEventListener('click', () => {
  form.reset();
  void connect();
});
const initial = new URLSearchParams(location.search);
for (const f of FIELDS) if (initial.has(f)) form.elements[f].value = initial.get(f);
void connect();
