// The demo page in a real browser: Debian's chromium driven by playwright-core loads GET / from a running HTTPS
// server (self-signed certificate accepted, as a person would), uploads real photos in every mode over REST and
// WebSocket, and checks that what the canvas shows matches the JSON the page received: a face box border has the
// box colour, a recognized face turns Unknown below its distance, a pose bone has its BODY_25 colour, an object box
// has its class colour. A screenshot per mode goes to test-output/demo/.

import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { BODY_25_BONES, type Body25Point } from '../src/engine/pose.js';
import { createApp } from '../src/server/app.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { loadTls } from '../src/server/tls.js';
import { DATA_DIR, httpsRequest, openEngine, ROOT, useTempDirs } from './helpers.js';

export const CHROMIUM = '/usr/bin/chromium';
// The callbacks given to page.evaluate run in the page. These are the few browser globals they use: the tests
// compile without the DOM library, whose BodyInit would refuse the Buffers the other tests send.
interface PageCanvas {
  width: number;
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}
declare const window: object;
declare const document: {
  getElementById(id: string): unknown;
  body: { appendChild(n: object): void };
  createElement(tag: 'script'): { textContent: string };
};
declare function getComputedStyle(e: object): { backgroundColor: string };

const OUT = path.join(ROOT, 'test-output', 'demo');
const GROUP = 'dlib/faces/2008_002506.jpg';
const JOHN = 'dlib/johns/John_Savage/000296_01099007.jpg';
const PEOPLE = 'darknet/person.jpg';
const OBJECTS = 'darknet/dog.jpg';

const newTmpDir = useTempDirs();
let engine: Engine;
let service: RecognitionService;
let running: RunningServer;
let browser: Browser;
let page: Page;
let ca: string;
/** Console messages of Content-Security-Policy violations, over every test of the file. */
const cspViolations: string[] = [];

type Json = Record<string, unknown>;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run \`node scripts/setup/setup.mjs --test\`, which installs Debian's chromium`);
  engine = await openEngine({ workers: 2 });
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-demo-')), { log: () => {} });
  await service.ready;
  for (const p of loadJohns(DATA_DIR).filter((_, i) => i % 11 < 3)) await service.enrol(p.subject, p.bytes);
  const tls = await loadTls({ dataDir: newTmpDir('edgecv-demo-tls-') });
  ca = tls.cert;
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT }, recognition: service });
  running = await startServer({ app, tls, port: 0, host: '127.0.0.1', webSocketMaxPayload: DEFAULT_BODY_LIMIT });
  fs.mkdirSync(OUT, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 900, height: 700 } });
  page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  await page.goto(running.url);
  await page.waitForFunction(() => 'edgecvDemo' in window);
  expect(problems).toEqual([]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await running?.close(1000);
  await service?.close();
  await engine?.close();
});

/** Selects mode and transport, uploads the photo, and returns the JSON drawn for it. */
async function show(mode: string, transport: 'rest' | 'ws', name: string): Promise<Json> {
  await page.check(`input[name=mode][value=${mode}]`);
  await page.check(`input[name=transport][value=${transport}]`);
  await page.setInputFiles('#file', path.join(DATA_DIR, name));
  const base = path.basename(name);
  await page.waitForFunction(
    ([m, t, n]) => {
      const d = (window as unknown as { edgecvDemo: { inFlight: number; results: { name: string; mode: string; transport: string }[] } }).edgecvDemo;
      const last = d.results.at(-1);
      return d.inFlight === 0 && last?.name === n && last.mode === m && last.transport === t;
    },
    [mode, transport, base] as const,
    { timeout: 20_000 },
  );
  await page.screenshot({ path: path.join(OUT, `${mode}-${transport}.png`) });
  return page.evaluate(() => (window as unknown as { edgecvDemo: { results: { json: Json }[] } }).edgecvDemo.results.at(-1)!.json);
}

/** The canvas pixel at image coordinates (x, y), as #rrggbb. */
function pixel(x: number, y: number): Promise<string> {
  return page.evaluate(
    ([px, py]) => {
      const canvas = document.getElementById('view') as PageCanvas;
      const [r, g, b] = canvas.getContext('2d')!.getImageData(Math.round(px), Math.round(py), 1, 1).data;
      return `#${[r!, g!, b!].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
    },
    [x, y] as const,
  );
}

async function rest(route: string, name: string): Promise<Json> {
  const r = await httpsRequest(`${running.url}${route.slice(1)}`, {
    method: 'POST',
    body: fs.readFileSync(path.join(DATA_DIR, name)),
    headers: { 'content-type': 'image/jpeg' },
    ca,
  });
  return JSON.parse(r.text) as Json;
}

function untimed(json: Json): Json {
  const { serverprocessingtime: _a, server_processing_time: _b, ...rest } = json;
  return rest;
}

type Rect = [number, number, number, number];
const colors = () => page.evaluate(() => (window as unknown as { edgecvDemo: { COLORS: Record<string, string> } }).edgecvDemo.COLORS);
/** A point on the middle of a box's left border (the right border when the left one is off the image). */
const leftBorder = ([l, t, , b]: Rect): [number, number] => [l, (t + b) / 2];

describe('demo page in chromium', () => {
  it('serves the page, its script and the BODY_25 bones module', async () => {
    expect(await page.title()).toBe('edgecv demo');
    const bones = await page.evaluate(() => (window as unknown as { edgecvDemo: { BODY_25_BONES: unknown } }).edgecvDemo.BODY_25_BONES);
    expect(bones).toEqual(JSON.parse(JSON.stringify(BODY_25_BONES)));
  });

  it.each(['rest', 'ws'] as const)('faces over %s: every returned box is drawn in the face colour', async (transport) => {
    const json = await show('detector', transport, GROUP);
    expect(untimed(json)).toEqual(untimed(await rest('/detector/detect/', GROUP)));
    const rects = json['rects'] as Rect[];
    expect(rects.length).toBe(3);
    const { face } = await colors();
    for (const r of rects) expect(await pixel(...leftBorder(r))).toBe(face);
    // and not everywhere: the centre of a face is the photo
    const [l, t, r, b] = rects[0]!;
    expect(await pixel((l + r) / 2, (t + b) / 2)).not.toBe(face);
    expect(await page.textContent('#stats')).toMatch(/server [0-9.]+ ms · round trip [0-9.]+ ms/);
  });

  it.each(['rest', 'ws'] as const)(
    'recognition over %s: the name box turns Unknown when the threshold goes below the distance',
    async (transport) => {
      const json = await show('recognizer', transport, JOHN);
      expect(json['success']).toBe('true');
      expect(json['subject']).toBe('John_Savage');
      const distance = Number(json['confidence']);
      const { known, unknown } = await colors();
      const at = leftBorder(json['rect'] as Rect);
      expect(await pixel(...at)).toBe(distance <= 105 ? known : unknown);
      await page.fill('#threshold', String(Math.max(0, Math.floor(distance) - 1)));
      expect(await pixel(...at)).toBe(unknown);
      await page.fill('#threshold', String(Math.ceil(distance) + 1));
      expect(await pixel(...at)).toBe(known);
      await page.fill('#threshold', '105');
    },
  );

  it.each(['rest', 'ws'] as const)('pose over %s: the bones of the returned poses are drawn in their BODY_25 colours', async (transport) => {
    const json = await show('pose', transport, PEOPLE);
    const poses = json['poses'] as Body25Point[][];
    expect(poses.length).toBeGreaterThan(0);
    // bones are drawn in BODY_25_BONES order, pose after pose: the last one drawn is on top everywhere
    const drawn = poses.flatMap((pose) =>
      BODY_25_BONES.filter(({ pair }) => pose[pair[0]]![2] > 0 && pose[pair[1]]![2] > 0).map((bone) => ({
        bone,
        a: pose[bone.pair[0]]!,
        b: pose[bone.pair[1]]!,
      })),
    );
    expect(drawn.length).toBeGreaterThan(4);
    const last = drawn.at(-1)!;
    expect(await pixel((last.a[0] + last.b[0]) / 2, (last.a[1] + last.b[1]) / 2)).toBe(`#${last.bone.color}`);
    // the longest bone of the first pose, unless a later bone crosses it there
    const first = drawn
      .filter((d) => poses[0]!.includes(d.a))
      .sort((x, y) => Math.hypot(y.a[0] - y.b[0], y.a[1] - y.b[1]) - Math.hypot(x.a[0] - x.b[0], x.a[1] - x.b[1]))[0]!;
    const mid: [number, number] = [(first.a[0] + first.b[0]) / 2, (first.a[1] + first.b[1]) / 2];
    const colour = await pixel(...mid);
    expect(drawn.some((d) => `#${d.bone.color}` === colour)).toBe(true);
  });

  it.each(['rest', 'ws'] as const)('objects over %s: the boxes are drawn in their class colours', async (transport) => {
    const json = await show('object', transport, OBJECTS);
    const objects = json['objects'] as { rect: Rect; class: string; confidence: string }[];
    expect(objects.map((o) => o.class)).toContain('dog');
    const last = objects.at(-1)!;
    const colour = await page.evaluate(
      (c) => (window as unknown as { edgecvDemo: { classColor(c: string): string } }).edgecvDemo.classColor(c),
      last.class,
    );
    const size = await page.evaluate(() => (document.getElementById('view') as PageCanvas).width);
    const [l, t, r, b] = last.rect;
    const x = l >= 0 ? l : r < size ? r : size - 1;
    expect(await pixel(x, (t + b) / 2)).toBe(colour);
    // the HTTP reference's screenshot (docs/demo.jpg is a copy of this one): header and picture, JPEG to stay small
    if (transport === 'ws') {
      const box = (await page.locator('#drop').boundingBox())!;
      await page.screenshot({
        path: path.join(OUT, 'readme.jpg'),
        type: 'jpeg',
        quality: 80,
        clip: { x: 0, y: 0, width: 900, height: box.y + box.height + 8 },
      });
    }
  });

  it('draws the answer to the latest photo when an earlier request comes back after it (REST)', async () => {
    type Demo = { edgecvDemo: { inFlight: number; results: { name: string; json: Json }[] } };
    await show('object', 'rest', PEOPLE);
    const before = await page.evaluate(() => (window as unknown as Demo).edgecvDemo.results.length);
    // The first request (GROUP) reaches the real server 800 ms late, so its answer comes back after the second's.
    let held = true;
    await page.route('**/object/detect/', async (route) => {
      if (held) {
        held = false;
        await new Promise((resolve) => setTimeout(resolve, 800));
      }
      await route.continue();
    });
    try {
      await page.setInputFiles('#file', path.join(DATA_DIR, GROUP));
      await page.waitForFunction(() => (window as unknown as Demo).edgecvDemo.inFlight > 0);
      await page.setInputFiles('#file', path.join(DATA_DIR, OBJECTS));
      await page.waitForFunction(() => (window as unknown as Demo).edgecvDemo.inFlight === 0, undefined, { timeout: 20_000 });
      expect(held).toBe(false); // the first request was held back
      const drawn = await page.evaluate((n) => (window as unknown as Demo).edgecvDemo.results.slice(n), before);
      expect(drawn.map((r) => r.name)).toEqual([path.basename(OBJECTS)]); // the late answer for GROUP is dropped
      expect((drawn[0]!.json['objects'] as { class: string }[]).map((o) => o.class)).toContain('dog');
    } finally {
      await page.unroute('**/object/detect/');
    }
  });

  // The face library: a subject's samples with their crops; one deleted and one moved from the page.
  it('shows a subject samples with their crops, deletes one and moves one', async () => {
    const photos = loadJohns(DATA_DIR)
      .filter((p) => p.subject === 'John_Simm')
      .slice(5, 8);
    for (const p of photos) await service.enrol('library demo', p.bytes);
    const ids = service.subjects().find((s) => s.subject === 'library demo')!.ids;
    const cards = page.locator('#librarySamples .sample');
    await page.fill('#libraryPageSize', '2'); // two a page: the third is on the next
    await page.click('#libraryShow'); // lists the subjects as they are now
    await page.selectOption('#librarySubject', 'library demo');
    // the chosen subject's cards, not the first subject's that the list showed before the choice
    const shownIds = () => cards.evaluateAll((list) => list.map((c) => Number((c as unknown as { dataset: { id: string } }).dataset.id)));
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual(ids.slice(0, 2));
    await expect.poll(() => page.locator('#libraryCount').textContent()).toBe('2 of 3');
    await page.click('#libraryMore');
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual(ids);
    await expect.poll(() => page.locator('#libraryMore').isHidden()).toBe(true);
    expect(await page.locator('#libraryCount').textContent()).toBe('3 of 3');
    // every crop is a decoded image
    const widths = () =>
      page.locator('#librarySamples .sample img').evaluateAll((imgs) => imgs.map((i) => (i as unknown as { naturalWidth: number }).naturalWidth));
    await expect.poll(async () => (await widths()).every((w) => w > 0)).toBe(true);
    await expect.poll(async () => (await widths()).length).toBe(3);
    const card = (id: number) => page.locator(`#librarySamples .sample[data-id="${id}"]`);

    await card(ids[0]!).getByRole('button', { name: 'delete' }).click();
    await expect.poll(() => cards.count(), { timeout: 10_000 }).toBe(2);
    expect(service.subjects().find((s) => s.subject === 'library demo')!.ids).toEqual(ids.slice(1));

    await card(ids[1]!).locator('input.moveTo').fill('library moved');
    await card(ids[1]!).getByRole('button', { name: 'move' }).click();
    await expect.poll(() => cards.count(), { timeout: 10_000 }).toBe(1);
    expect(service.subjects().find((s) => s.subject === 'library moved')!.ids).toEqual([ids[1]]);

    // a move with no subject to give it to is refused, and the page says why
    await card(ids[2]!).getByRole('button', { name: 'move' }).click();
    await expect.poll(() => page.locator('#libraryError').textContent()).toMatch(/'to'/);
    expect(await cards.count()).toBe(1);
  });

  // The page forbids framing and any script but its own, and works under that policy.
  it('is served with a Content-Security-Policy and X-Frame-Options that it runs under without a violation', async () => {
    const r = await httpsRequest(running.url, { ca });
    expect(r.status).toBe(200);
    expect(r.headers['x-frame-options']).toBe('DENY');
    const csp = String(r.headers['content-security-policy']);
    expect(csp).toMatch(/(^|; )default-src 'none'/);
    expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(csp).toMatch(/(^|; )frame-ancestors 'none'/);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    // the inline style is allowed by its hash: the page has its dark background
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(21, 23, 26)');
    // every mode above ran over REST and WebSocket under the policy
    expect(cspViolations).toEqual([]);
    // an inline script (what an injected name would need) is refused
    const injected = await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.injectedRan = true';
      document.body.appendChild(s);
      return 'injectedRan' in window;
    });
    expect(injected).toBe(false);
  });
});
