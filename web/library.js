// The demo page's face library: a subject's samples (GET /trainer/samples/) with their crops and quality, each
// deleted (POST /trainer/remove/ with its id) or given to another subject (POST /trainer/move/). These routes need
// the admin: the key typed on the page is sent as X-API-Key (none: the server takes loopback clients only).

const $ = (id) => document.getElementById(id);

async function call(path, init = {}) {
  const key = $('adminKey').value.trim();
  const res = await fetch(path, { ...init, headers: { ...(key ? { 'X-API-Key': key } : {}), ...(init.headers ?? {}) } });
  const body = await res.json();
  if (!res.ok || body.success === 'false') throw new Error(body.error ?? body.reason ?? `HTTP ${res.status}`);
  return body;
}

const post = (path, fields) => call(path, { method: 'POST', body: JSON.stringify(fields), headers: { 'Content-Type': 'application/json' } });

async function refreshSubjects() {
  const { subjects } = await call('/trainer/subjects/');
  const select = $('librarySubject');
  const current = select.value;
  select.replaceChildren(...subjects.map((s) => new Option(`${s.subject} (${s.samples})`, s.subject)));
  if (subjects.some((s) => s.subject === current)) select.value = current;
}

function button(text, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.addEventListener('click', onClick);
  return b;
}

/** One sample: its crop, id, date and quality, a delete button, and a subject to move it to. */
function sampleCard(subject, s) {
  const card = document.createElement('figure');
  card.className = 'sample';
  card.dataset.id = String(s.id);
  if (s.crop) {
    const img = new Image();
    img.src = `data:image/jpeg;base64,${s.crop}`;
    img.alt = `sample ${s.id}`;
    card.append(img);
  }
  const caption = document.createElement('figcaption');
  const quality = s.quality ? ` · face ${s.quality.face_side} px · sharpness ${Math.round(s.quality.sharpness)}` : '';
  caption.textContent = `#${s.id} · ${s.created.slice(0, 16).replace('T', ' ')}${quality}`;
  const to = document.createElement('input');
  to.className = 'moveTo';
  to.placeholder = 'move to subject';
  card.append(
    caption,
    button('delete', () => act(() => post('/trainer/remove/', { subject, id: s.id }))),
    to,
    button('move', () => act(() => post('/trainer/move/', { subject, id: s.id, to: to.value.trim() }))),
  );
  return card;
}

/** Requests of showSamples() started: only the latest one draws, so a slow answer for an earlier choice cannot. */
let samplesAsked = 0;

async function showSamples() {
  const ticket = ++samplesAsked;
  const subject = $('librarySubject').value;
  if (!subject) {
    $('librarySamples').replaceChildren();
    return;
  }
  const { samples } = await call(`/trainer/samples/?subject=${encodeURIComponent(subject)}`);
  if (ticket !== samplesAsked) return;
  $('librarySamples').replaceChildren(...samples.map((s) => sampleCard(subject, s)));
}

/** Runs a library action, then shows the subjects and samples as they are now; an error is shown beside. */
async function act(work) {
  try {
    await work();
    $('libraryError').textContent = '';
    await refreshSubjects();
    await showSamples();
  } catch (e) {
    $('libraryError').textContent = e.message;
  }
}

$('libraryShow').addEventListener('click', () => void act(async () => {}));
$('librarySubject').addEventListener('change', () => void act(async () => {}));
