// POST /pose/detect/ (and /openpose/detect/) and POST /object/detect/ with the real engine and real photos.
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { sharedEngine, photo } from './helpers.js';
import { expectError, imageErrorCases, imageForms, json, TIME_RE } from './support/http-api.js';

type Point = [number, number, number];
interface PoseJson {
  success: string;
  serverprocessingtime: string;
  server_processing_time: string;
  poses?: Point[][];
}
interface ObjectJson {
  success: string;
  serverprocessingtime: string;
  server_processing_time: string;
  gpu_support: boolean;
  objects?: { rect: number[]; class: string; confidence: string }[];
}

const POSE = '/pose/detect/';
const OBJECT = '/object/detect/';
const PEOPLE_PHOTOS = [
  'darknet/person.jpg',
  'skimage/astronaut.png',
  'dlib/faces/Tom_Cruise_avp_2014_4.jpg',
  'dlib/faces/2008_001322.jpg',
  'dlib/faces/2008_002506.jpg',
];

const typeOf = (name: string) => (name.endsWith('.png') ? 'image/png' : 'image/jpeg');

/** A flat grey PNG: nothing to find in it. */
function greyPng(): Buffer {
  const png = new PNG({ width: 320, height: 240 });
  png.data.fill(128);
  return PNG.sync.write(png);
}

function checkPoseShape(body: PoseJson): Point[][] {
  expect(body.serverprocessingtime).toMatch(TIME_RE);
  expect(body.server_processing_time).toBe(body.serverprocessingtime);
  if (body.success === 'false') {
    expect(Object.keys(body)).toEqual(['success', 'serverprocessingtime', 'server_processing_time']);
    return [];
  }
  expect(body.success).toBe('true');
  expect(Object.keys(body)).toEqual(['success', 'serverprocessingtime', 'server_processing_time', 'poses']);
  expect(body.poses!.length).toBeGreaterThan(0);
  expect(body.poses!.length).toBeLessThanOrEqual(6);
  for (const pose of body.poses!) {
    expect(pose).toHaveLength(25);
    for (const p of pose) {
      expect(p).toHaveLength(3);
      for (const v of p) expect(Number.isFinite(v)).toBe(true);
      expect(p[2]).toBeGreaterThanOrEqual(0);
      expect(p[2]).toBeLessThanOrEqual(1);
      if (p[2] === 0) expect(p).toEqual([0, 0, 0]);
    }
    for (const foot of pose.slice(19)) expect(foot).toEqual([0, 0, 0]); // MoveNet has no feet
  }
  return body.poses!;
}

function checkObjectShape(body: ObjectJson, gpu: boolean): NonNullable<ObjectJson['objects']> {
  expect(body.serverprocessingtime).toMatch(TIME_RE);
  expect(body.server_processing_time).toBe(body.serverprocessingtime);
  expect(body.gpu_support).toBe(gpu);
  if (body.success === 'false') {
    expect(Object.keys(body)).toEqual(['success', 'serverprocessingtime', 'server_processing_time', 'gpu_support']);
    return [];
  }
  expect(body.success).toBe('true');
  expect(Object.keys(body)).toEqual(['success', 'serverprocessingtime', 'server_processing_time', 'gpu_support', 'objects']);
  for (const o of body.objects!) {
    expect(Object.keys(o)).toEqual(['rect', 'class', 'confidence']);
    expect(o.rect).toHaveLength(4);
    for (const v of o.rect) expect(Number.isInteger(v)).toBe(true);
    expect(o.rect[0]).toBeLessThan(o.rect[2]!);
    expect(o.rect[1]).toBeLessThan(o.rect[3]!);
    expect(o.confidence).toMatch(/^[01]\.\d{3}$/);
    expect(Number(o.confidence)).toBeLessThanOrEqual(1);
  }
  return body.objects!;
}

describe('pose and object routes (real engine, real photos)', () => {
  let engine: Engine;
  let app: ReturnType<typeof createApp>;
  let gpu: boolean;
  const post = (path: string, init: RequestInit) => app.request(path, init);
  const postPhoto = (path: string, name: string) => post(path, { method: 'POST', body: photo(name), headers: { 'content-type': typeOf(name) } });

  beforeAll(async () => {
    engine = await sharedEngine();
    gpu = engine.backend().backend === 'cuda';
    app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
  });

  it('pose: answers the exact format, one BODY_25 pose per person', async () => {
    const res = await postPhoto(POSE, 'dlib/faces/2008_001322.jpg');
    expect(res.status).toBe(200);
    expect(await res.clone().text()).toMatch(
      /^\{"success":"true","serverprocessingtime":"\d+\.\d{3}","server_processing_time":"\d+\.\d{3}","poses":\[\[\[/,
    );
    const poses = checkPoseShape(await json<PoseJson>(res));
    expect(poses).toHaveLength(3);
    for (const pose of poses) {
      // neck = midpoint of the shoulders (2 right, 5 left) when both are there
      const [r, l, neck] = [pose[2]!, pose[5]!, pose[1]!];
      if (r[2] > 0 && l[2] > 0) {
        expect(neck[0]).toBeCloseTo((r[0] + l[0]) / 2, 1);
        expect(neck[1]).toBeCloseTo((r[1] + l[1]) / 2, 1);
      }
    }
  });

  it('pose: the same answer at /pose/detect, /openpose/detect/ and /openpose/detect', async () => {
    const want = checkPoseShape(await json<PoseJson>(await postPhoto(POSE, 'darknet/person.jpg')));
    for (const path of ['/pose/detect', '/openpose/detect/', '/openpose/detect']) {
      const res = await postPhoto(path, 'darknet/person.jpg');
      expect(res.status).toBe(200);
      expect(checkPoseShape(await json<PoseJson>(res))).toEqual(want);
    }
  });

  for (const [path, check] of [
    [POSE, (b: unknown) => checkPoseShape(b as PoseJson)],
    [OBJECT, (b: unknown) => checkObjectShape(b as ObjectJson, gpu)],
  ] as const) {
    for (const name of ['darknet/person.jpg', 'skimage/astronaut.png']) {
      it(`${path}: every way of sending ${name} gives the same answer`, async () => {
        const answers = [];
        for (const [form, init] of imageForms(photo(name), typeOf(name))) {
          const res = await post(path, init());
          expect(res.status, form).toBe(200);
          answers.push(check(await json(res)));
        }
        expect(answers[0]!.length).toBeGreaterThan(0);
        for (const a of answers.slice(1)) expect(a).toEqual(answers[0]);
      });
    }

    it(`${path}: every bad request gets its JSON error and status`, async () => {
      for (const c of imageErrorCases()) {
        const res = await post(path, c.init());
        expect(res.status, c.name).toBe(c.status);
        const body = await json(res);
        expectError(body, c.error, path === OBJECT ? ['gpu_support'] : []);
        if (path === OBJECT) expect(body['gpu_support']).toBe(gpu);
      }
      const get = await app.request(path);
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST, OPTIONS');
    });

    it(`${path}: a threshold parameter is honoured, a bad one is a 400`, async () => {
      const strict = await post(`${path}?threshold=1`, {
        method: 'POST',
        body: photo('darknet/person.jpg'),
        headers: { 'content-type': 'image/jpeg' },
      });
      expect((await json(strict))['success']).toBe('false');
      const form = new FormData();
      form.append('image', new Blob([photo('darknet/person.jpg')]), 'p.jpg');
      form.append('threshold', '1');
      expect((await json(await post(path, { method: 'POST', body: form })))['success']).toBe('false');
      const bad = await post(`${path}?threshold=abc`, {
        method: 'POST',
        body: photo('darknet/person.jpg'),
        headers: { 'content-type': 'image/jpeg' },
      });
      expect(bad.status).toBe(400);
      expectError(await json(bad), /threshold/, path === OBJECT ? ['gpu_support'] : []);
    });
  }

  it('pose: success "false" and no poses where there is nobody', async () => {
    for (const name of ['darknet/horses.jpg', 'darknet/eagle.jpg']) {
      const body = await json<PoseJson>(await postPhoto(POSE, name));
      expect(body.success).toBe('false');
      expect(checkPoseShape(body)).toEqual([]);
    }
  });

  it('objects: answers the exact format with gpu_support as a JSON boolean', async () => {
    const res = await postPhoto(OBJECT, 'darknet/dog.jpg');
    expect(res.status).toBe(200);
    expect(await res.clone().text()).toMatch(
      /^\{"success":"true","serverprocessingtime":"\d+\.\d{3}","server_processing_time":"\d+\.\d{3}","gpu_support":(true|false),"objects":\[\{"rect":\[-?\d+,-?\d+,-?\d+,-?\d+\],"class":"[a-z ]+","confidence":"[01]\.\d{3}"\}/,
    );
    const objects = checkObjectShape(await json<ObjectJson>(res), gpu);
    const classes = objects.map((o) => o.class);
    expect(classes).toContain('bicycle');
    expect(classes.some((c) => c === 'car' || c === 'truck')).toBe(true);
  });

  it('objects: success "false", gpu_support and no objects on a flat grey image', async () => {
    const res = await post(OBJECT, { method: 'POST', body: greyPng(), headers: { 'content-type': 'image/png' } });
    expect(res.status).toBe(200);
    const body = await json<ObjectJson>(res);
    expect(body.success).toBe('false');
    expect(checkObjectShape(body, gpu)).toEqual([]);
  });

  it("every pose keypoint lies inside that person's box from the object route", async () => {
    for (const name of PEOPLE_PHOTOS) {
      const poses = checkPoseShape(await json<PoseJson>(await postPhoto(POSE, name)));
      const people = checkObjectShape(await json<ObjectJson>(await postPhoto(OBJECT, name)), gpu).filter((o) => o.class === 'person');
      expect(poses.length, name).toBeGreaterThan(0);
      for (const pose of poses) {
        const seen = pose.filter((p) => p[2] > 0);
        // the person box (10% margin) that holds the most of this pose's points must hold them all
        const inside = (rect: number[], [x, y]: Point) => {
          const mx = 0.1 * (rect[2]! - rect[0]!);
          const my = 0.1 * (rect[3]! - rect[1]!);
          return x >= rect[0]! - mx && x <= rect[2]! + mx && y >= rect[1]! - my && y <= rect[3]! + my;
        };
        const best = Math.max(...people.map((o) => seen.filter((p) => inside(o.rect, p)).length));
        expect(best, `${name}: ${seen.length} keypoints, person boxes ${JSON.stringify(people.map((o) => o.rect))}`).toBe(seen.length);
      }
    }
  });

  it('limbs are plausible: heads above necks above hips, and no pose with both wrists above its head', async () => {
    for (const name of PEOPLE_PHOTOS) {
      for (const pose of checkPoseShape(await json<PoseJson>(await postPhoto(POSE, name)))) {
        const [nose, neck, , , rWrist, , , lWrist, midHip] = pose as Point[];
        if (nose![2] > 0 && neck![2] > 0) expect(neck![1], name).toBeGreaterThan(nose![1]);
        if (neck![2] > 0 && midHip![2] > 0) expect(midHip![1], name).toBeGreaterThan(neck![1]);
        if (nose![2] > 0 && rWrist![2] > 0 && lWrist![2] > 0) {
          expect(rWrist![1] < nose![1] && lWrist![1] < nose![1], name).toBe(false);
        }
      }
    }
  });

  describe('--pose-requires-gpu', () => {
    it('on a server without CUDA: 501 with a plain-text message; objects still work', async () => {
      // Only the backend report is replaced (so this holds on a CUDA machine too); detection is the real engine's.
      const cpuReport = {
        detectFaces: engine.detectFaces.bind(engine),
        detectPoses: engine.detectPoses.bind(engine),
        detectObjects: engine.detectObjects.bind(engine),
        backend: () => ({ ...engine.backend(), backend: 'cpu' as const }),
      };
      const strict = createApp({ engine: cpuReport, config: { bodyLimit: DEFAULT_BODY_LIMIT, poseRequiresGpu: true } });
      for (const path of [POSE, '/openpose/detect/']) {
        const res = await strict.request(path, { method: 'POST', body: photo('darknet/person.jpg'), headers: { 'content-type': 'image/jpeg' } });
        expect(res.status).toBe(501);
        expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
        expect(await res.text()).toMatch(/pose engine is not supported on this server/);
      }
      const objects = await strict.request(OBJECT, { method: 'POST', body: photo('darknet/person.jpg'), headers: { 'content-type': 'image/jpeg' } });
      expect(objects.status).toBe(200);
    });

    it('off (the default): pose runs on the CPU', async () => {
      const relaxed = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, poseRequiresGpu: false } });
      const res = await relaxed.request(POSE, { method: 'POST', body: photo('darknet/person.jpg'), headers: { 'content-type': 'image/jpeg' } });
      expect(res.status).toBe(200);
      expect(checkPoseShape(await json<PoseJson>(res))).toHaveLength(1);
    });

    it('on, with an engine that reports CUDA: pose is served', async () => {
      // Only the backend report is replaced (no CUDA here); the detection itself is the real engine's.
      const cudaReport = {
        detectFaces: engine.detectFaces.bind(engine),
        detectPoses: engine.detectPoses.bind(engine),
        detectObjects: engine.detectObjects.bind(engine),
        backend: () => ({ ...engine.backend(), backend: 'cuda' as const, device: 'reported' }),
      };
      const strict = createApp({ engine: cudaReport, config: { bodyLimit: DEFAULT_BODY_LIMIT, poseRequiresGpu: true } });
      const res = await strict.request(POSE, { method: 'POST', body: photo('darknet/person.jpg'), headers: { 'content-type': 'image/jpeg' } });
      expect(res.status).toBe(200);
      expect(checkPoseShape(await json<PoseJson>(res))).toHaveLength(1);
      const objects = await json<ObjectJson>(
        await strict.request(OBJECT, { method: 'POST', body: greyPng(), headers: { 'content-type': 'image/png' } }),
      );
      expect(objects.gpu_support).toBe(true);
    });
  });
});
