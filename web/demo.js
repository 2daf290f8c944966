// The demo page's script: sends a photo (or webcam frames) to a route over REST or WebSocket and draws the answer
// over the image. No build step: the server serves this file as is, and body25.js from the library's BODY_25_BONES.

import { BODY_25_BONES } from './body25.js';

export const COLORS = { face: '#00e676', known: '#00e676', unknown: '#ff1744', label: '#ffffff' };
const REST_PATHS = { detector: '/detector/detect/', recognizer: '/recognizer/predict/', pose: '/pose/detect/', object: '/object/detect/' };
const WS_PATHS = { detector: '/ws/detector/detect', recognizer: '/ws/recognizer/predict', pose: '/ws/pose/detect', object: '/ws/object/detect' };

/** A stable colour per object class (hue from a hash of the name), as #rrggbb. */
export function classColor(name) {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return hslHex(h % 360, 0.9, 0.55);
}

function hslHex(h, s, l) {
  const f = (n) => {
    const k = (n + h / 30) % 12;
    const c = l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(255 * c)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

const $ = (id) => document.getElementById(id);
const canvas = $('view');
const ctx = canvas.getContext('2d');
// `asked` numbers the requests: an answer that comes back after a later request was sent is not drawn (over REST
// two requests can finish in either order).
const state = { name: '', image: null, bytes: null, type: 'image/jpeg', json: null, webcam: null, sockets: new Map(), asked: 0 };

const mode = () => document.querySelector('input[name=mode]:checked').value;
const transport = () => document.querySelector('input[name=transport]:checked').value;
const threshold = () => Number($('threshold').value) || 105;

// ------------------------------------------------------------------ transports

async function sendRest(path, bytes, type) {
  const res = await fetch(path, { method: 'POST', body: bytes, headers: { 'Content-Type': type } });
  const json = await res.json();
  return res.ok ? json : { ...json, status: res.status };
}

/** One socket per route, answers in order: a FIFO of waiting resolvers. */
function socketFor(path) {
  let entry = state.sockets.get(path);
  if (entry && entry.ws.readyState <= WebSocket.OPEN) return entry;
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`);
  ws.binaryType = 'arraybuffer';
  entry = {
    ws,
    waiting: [],
    open: new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = () => reject(new Error('WebSocket failed'));
    }),
  };
  ws.onmessage = (e) => entry.waiting.shift()?.resolve(JSON.parse(e.data));
  ws.onclose = (e) => {
    for (const w of entry.waiting.splice(0)) w.reject(new Error(`WebSocket closed (${e.code}${e.reason ? `: ${e.reason}` : ''})`));
    state.sockets.delete(path);
  };
  state.sockets.set(path, entry);
  return entry;
}

async function sendWs(path, bytes) {
  const entry = socketFor(path);
  await entry.open;
  return new Promise((resolve, reject) => {
    entry.waiting.push({ resolve, reject });
    entry.ws.send(bytes);
  });
}

async function analyse() {
  if (!state.bytes) return;
  const m = mode();
  const name = state.name;
  const t0 = performance.now();
  const ask = ++state.asked;
  $('error').textContent = '';
  window.edgecvDemo.inFlight++;
  try {
    const json = transport() === 'ws' ? await sendWs(WS_PATHS[m], state.bytes) : await sendRest(REST_PATHS[m], state.bytes, state.type);
    if (ask !== state.asked) return; // superseded
    const roundTrip = performance.now() - t0;
    state.json = json;
    $('stats').textContent = `server ${json.serverprocessingtime ?? '—'} ms · round trip ${roundTrip.toFixed(1)} ms`;
    if (json.error) $('error').textContent = `${json.status ?? ''} ${json.error}`;
    draw();
    window.edgecvDemo.results.push({ name, mode: m, transport: transport(), json, roundTripMs: roundTrip });
  } catch (e) {
    if (ask === state.asked) $('error').textContent = e.message;
  } finally {
    window.edgecvDemo.inFlight--;
  }
}

// ------------------------------------------------------------------ drawing

function lineWidth() {
  return Math.max(2, Math.round(Math.max(canvas.width, canvas.height) / 250));
}

function label(text, x, y, color) {
  const size = Math.max(12, lineWidth() * 6);
  ctx.font = `${size}px system-ui, sans-serif`;
  const w = ctx.measureText(text).width + 6;
  const top = Math.max(0, y - size - 4);
  ctx.fillStyle = color;
  ctx.fillRect(x, top, w, size + 4);
  ctx.fillStyle = '#000000';
  ctx.fillText(text, x + 3, top + size);
}

function box([l, t, r, b], color) {
  ctx.strokeStyle = color;
  ctx.lineWidth = lineWidth();
  ctx.strokeRect(l, t, r - l, b - t);
}

function draw() {
  if (!state.image) return;
  canvas.width = state.image.width;
  canvas.height = state.image.height;
  ctx.drawImage(state.image, 0, 0);
  const json = state.json;
  if (!json || json.success !== 'true') return;
  if (json.rects) for (const r of json.rects) box(r, COLORS.face);
  if (json.subject !== undefined && json.rect) {
    const distance = Number(json.confidence);
    const known = distance <= threshold();
    const color = known ? COLORS.known : COLORS.unknown;
    box(json.rect, color);
    label(`${known ? json.subject : 'Unknown'} ${distance.toFixed(1)}`, json.rect[0], json.rect[1], color);
  }
  if (json.poses) drawPoses(json.poses);
  if (json.objects) {
    for (const o of json.objects) {
      const color = classColor(o.class);
      box(o.rect, color);
      label(`${o.class} ${Number(o.confidence).toFixed(2)}`, o.rect[0], o.rect[1], color);
    }
  }
}

/** Keypoints first, then the bones over them in BODY_25 order: the last bone drawn is on top. */
function drawPoses(poses) {
  const w = lineWidth();
  for (const pose of poses) {
    for (const [x, y, c] of pose) {
      if (c <= 0) continue;
      ctx.fillStyle = COLORS.label;
      ctx.beginPath();
      ctx.arc(x, y, w * 1.5, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
  ctx.lineCap = 'butt';
  for (const pose of poses) {
    for (const { pair, color } of BODY_25_BONES) {
      const a = pose[pair[0]];
      const b = pose[pair[1]];
      if (!a || !b || a[2] <= 0 || b[2] <= 0) continue;
      ctx.strokeStyle = `#${color}`;
      ctx.lineWidth = w * 2;
      ctx.beginPath();
      ctx.moveTo(a[0], a[1]);
      ctx.lineTo(b[0], b[1]);
      ctx.stroke();
    }
  }
}

// ------------------------------------------------------------------ inputs

async function useFile(file) {
  if (!file) return;
  stopWebcam();
  state.name = file.name;
  state.bytes = new Uint8Array(await file.arrayBuffer());
  state.type = file.type === 'image/png' ? 'image/png' : 'image/jpeg';
  state.image = await createImageBitmap(new Blob([state.bytes], { type: state.type }));
  state.json = null;
  $('drop').querySelector('p').hidden = true;
  canvas.hidden = false;
  draw();
  await analyse();
}

async function startWebcam() {
  const video = $('video');
  video.srcObject = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
  await video.play();
  state.webcam = true;
  $('webcam').textContent = 'stop webcam';
  $('drop').querySelector('p').hidden = true;
  canvas.hidden = false;
  const grab = document.createElement('canvas');
  // one frame in flight: capture, send, draw, repeat
  while (state.webcam) {
    grab.width = video.videoWidth;
    grab.height = video.videoHeight;
    grab.getContext('2d').drawImage(video, 0, 0);
    const blob = await new Promise((r) => grab.toBlob(r, 'image/jpeg', 0.85));
    state.image = await createImageBitmap(grab);
    state.bytes = new Uint8Array(await blob.arrayBuffer());
    state.type = 'image/jpeg';
    state.name = 'webcam';
    await analyse();
    await new Promise((r) => requestAnimationFrame(r));
  }
}

function stopWebcam() {
  if (!state.webcam) return;
  state.webcam = null;
  const video = $('video');
  for (const track of video.srcObject?.getTracks() ?? []) track.stop();
  video.srcObject = null;
  $('webcam').textContent = 'webcam';
}

$('file').addEventListener('change', (e) => void useFile(e.target.files[0]));
$('webcam').addEventListener('click', () => {
  if (state.webcam) stopWebcam();
  else startWebcam().catch((e) => ($('error').textContent = `webcam: ${e.message}`));
});
const drop = $('drop');
drop.addEventListener('dragover', (e) => {
  e.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  void useFile(e.dataTransfer.files[0]);
});
for (const input of document.querySelectorAll('input[name=mode], input[name=transport]')) {
  input.addEventListener('change', () => void analyse());
}
$('threshold').addEventListener('input', draw);

// For the browser test and the curious: every answer drawn, and the colours used.
window.edgecvDemo = { results: [], inFlight: 0, COLORS, classColor, BODY_25_BONES };
