// The demo page's face library: a subject's samples (GET /trainer/samples/, a page at a time: "more" asks for the
// next page after the last shown) with their crops and quality, each deleted (POST /trainer/remove/ with its id) or given to another subject (POST /trainer/move/). These routes need
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
/** The shown subject's next page (its `after`); null when its last sample is shown. */
let nextAfter = null;

function pageSize() {
  const n = Number($('libraryPageSize').value);
  return Number.isInteger(n) && n >= 1 && n <= 500 ? n : 50;
}

/** Draws a page of `subject` (appended to the shown ones with `more`) and what is left to show. */
async function showPage(subject, more) {
  const ticket = more ? samplesAsked : ++samplesAsked;
  const after = more ? `&after=${nextAfter}` : '';
  const page = await call(`/trainer/samples/?subject=${encodeURIComponent(subject)}&limit=${pageSize()}${after}`);
  if (ticket !== samplesAsked) return;
  const cards = page.samples.map((s) => sampleCard(subject, s));
  if (more) $('librarySamples').append(...cards);
  else $('librarySamples').replaceChildren(...cards);
  nextAfter = page.next_after;
  $('libraryMore').hidden = nextAfter === null;
  $('libraryCount').textContent = `${$('librarySamples').children.length} of ${page.total}`;
}

async function showSamples() {
  const subject = $('librarySubject').value;
  if (!subject) {
    ++samplesAsked;
    $('librarySamples').replaceChildren();
    $('libraryMore').hidden = true;
    $('libraryCount').textContent = '';
    return;
  }
  await showPage(subject, false);
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
$('libraryMore').addEventListener('click', async () => {
  try {
    if (nextAfter !== null) await showPage($('librarySubject').value, true);
  } catch (e) {
    $('libraryError').textContent = e.message;
  }
});
