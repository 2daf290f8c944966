// Pose and object detection through the library, on real photos with the real addon and models.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BODY_25_BONES,
  BODY_25_KEYPOINTS,
  COCO_CLASSES,
  COCO_KEYPOINTS,
  cocoToBody25,
  Engine,
  EngineError,
  MAX_POSES,
  POSE_DEFAULTS,
  type PoseMode,
} from '../src/index.js';
import { EXPECTED_OBJECTS, matchesExpected } from '../testkit/object-eval.js';
import { loadObjectLabels } from '../testkit/object-labels.js';
import { scorePoses } from '../testkit/pose-scoring.js';
import { fittedJpeg, pngOfJpeg } from '../testkit/vga-photos.js';
import { garbage, openEngine, photo, sharedEngine, ROOT } from './helpers.js';

// The engines a test opens for itself skip the warm-up (warmUp: false): no test here times a request.

// People in each photo, counted by eye; every one of them is at least half visible.
const PEOPLE: [string, number][] = [
  ['darknet/person.jpg', 1],
  ['skimage/astronaut.png', 1],
  ['skimage/camera.png', 1],
  ['dlib/faces/Tom_Cruise_avp_2014_4.jpg', 1],
  ['dlib/faces/2008_001322.jpg', 3],
  ['dlib/faces/2008_002506.jpg', 3],
  ['darknet/dog.jpg', 0],
  ['darknet/horses.jpg', 0],
  ['darknet/giraffe.jpg', 0],
  ['darknet/eagle.jpg', 0],
  ['skimage/coffee.png', 0],
  ['skimage/chelsea.png', 0],
  ['dlib/faces/dogs.jpg', 0],
];

describe('pose and object detection (real photos)', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await sharedEngine();
  });

  for (const [name, count] of PEOPLE) {
    it(`finds ${count} ${count === 1 ? 'person' : 'people'} in ${name} (one whole-image pass)`, async () => {
      // The person-crop mode is measured on the labelled set below; this pins the whole-image model.
      const result = await engine.detectPoses(photo(name), { mode: 'whole' });
      expect(result.poses.map((p) => p.score.toFixed(2))).toHaveLength(count);
      for (const pose of result.poses) {
        expect(pose.keypoints).toHaveLength(17);
        expect(pose.body25).toHaveLength(25);
        expect(pose.score).toBeGreaterThanOrEqual(0.2);
        // best first
        expect(result.poses.map((p) => p.score)).toEqual([...result.poses.map((p) => p.score)].sort((a, b) => b - a));
      }
    });
  }

  it('gives keypoints in image pixels, inside the letterbox of a wide and a tall photo', async () => {
    for (const name of ['darknet/person.jpg', 'dlib/faces/Tom_Cruise_avp_2014_4.jpg']) {
      const { poses, width, height } = await engine.detectPoses(photo(name));
      // every pose's seen keypoints (the close-up's best pose has 3 to 7 of them, by model and precision)
      const seen = poses.flatMap((pose) => pose.body25.filter((p) => p[2] > 0));
      expect(seen.length).toBeGreaterThanOrEqual(4);
      for (const [x, y] of seen) {
        expect(x).toBeGreaterThanOrEqual(-1);
        expect(x).toBeLessThanOrEqual(width + 1);
        expect(y).toBeGreaterThanOrEqual(-1);
        expect(y).toBeLessThanOrEqual(height + 1);
      }
    }
  });

  it('sees the standing person in person.jpg upright: head, shoulders, hips, knees, ankles top to bottom', async () => {
    const [pose] = (await engine.detectPoses(photo('darknet/person.jpg'))).poses;
    const point = (name: (typeof BODY_25_KEYPOINTS)[number]) => pose!.body25[BODY_25_KEYPOINTS.indexOf(name)]!;
    const y = (name: (typeof BODY_25_KEYPOINTS)[number]) => {
      expect(point(name)[2], name).toBeGreaterThan(0);
      return point(name)[1];
    };
    expect(y('neck')).toBeGreaterThan(y('nose'));
    expect(y('mid_hip')).toBeGreaterThan(y('neck'));
    for (const side of ['left', 'right'] as const) {
      expect(y(`${side}_knee`)).toBeGreaterThan(y(`${side}_hip`));
      expect(y(`${side}_ankle`)).toBeGreaterThan(y(`${side}_knee`));
    }
    // a standing person at rest, seen from behind (one wrist may be hidden): the wrists hang between the
    // shoulders and the knees, so neither is above the head
    const wrists = (['left', 'right'] as const).filter((side) => point(`${side}_wrist`)[2] > 0);
    expect(wrists.length).toBeGreaterThanOrEqual(1);
    for (const side of wrists) {
      expect(y(`${side}_wrist`)).toBeGreaterThan(y(`${side}_shoulder`));
      expect(y(`${side}_wrist`)).toBeLessThan(y(`${side}_knee`));
    }
  });

  it('honours maxPoses, scoreThreshold and keypointThreshold', async () => {
    const group = photo('dlib/faces/2008_001322.jpg');
    expect((await engine.detectPoses(group, { maxPoses: 2 })).poses).toHaveLength(2);
    expect((await engine.detectPoses(group, { scoreThreshold: 1 })).poses).toHaveLength(0);
    const loose = await engine.detectPoses(group, { keypointThreshold: 0 });
    const strict = await engine.detectPoses(group, { keypointThreshold: 0.9 });
    const shown = (r: typeof loose) => r.poses.flatMap((p) => p.body25).filter((p) => p[2] > 0).length;
    expect(shown(loose)).toBeGreaterThan(shown(strict));
    // the raw keypoints are the same whatever the threshold
    expect(strict.poses[0]!.keypoints).toEqual(loose.poses[0]!.keypoints);
  });

  for (const [name, expected] of EXPECTED_OBJECTS) {
    it(`finds ${expected.map((e) => e.classes.join('/')).join(', ')} in ${name}, where they are (default model and threshold)`, async () => {
      const { objects, width, height } = await engine.detectObjects(photo(name));
      const found = objects.map((o) => `${o.className} ${o.score.toFixed(2)} [${o.rect.map(Math.round).join(',')}]`);
      for (const e of expected) {
        expect(
          objects.some((o) => matchesExpected(o, e, width, height)),
          `${e.classes.join('/')} in ${found.join('; ')}`,
        ).toBe(true);
      }
    });
  }

  it('finds several horses in horses.jpg, each in its own place', async () => {
    const { objects } = await engine.detectObjects(photo('darknet/horses.jpg'));
    const horses = objects.filter((o) => o.className === 'horse');
    expect(horses.length).toBeGreaterThanOrEqual(3);
    const centres = horses.map((h) => (h.rect[0] + h.rect[2]) / 2);
    expect(new Set(centres.map((c) => Math.round(c / 40))).size).toBeGreaterThanOrEqual(3);
  });

  it('respects scoreThreshold and maxObjects, best first', async () => {
    const dog = photo('darknet/dog.jpg');
    const all = await engine.detectObjects(dog, { scoreThreshold: 0.1 });
    expect(all.objects.length).toBeGreaterThan(3);
    expect(all.objects.every((o) => o.score >= 0.1 && o.score <= 1)).toBe(true);
    expect(all.objects.map((o) => o.score)).toEqual([...all.objects.map((o) => o.score)].sort((a, b) => b - a));
    expect((await engine.detectObjects(dog, { maxObjects: 2, scoreThreshold: 0.1 })).objects).toEqual(all.objects.slice(0, 2));
    const strict = await engine.detectObjects(dog, { scoreThreshold: 0.45 });
    expect(strict.objects).toEqual(all.objects.filter((o) => o.score >= 0.45));
    for (const o of all.objects) expect(COCO_CLASSES[o.classId]).toBe(o.className);
  });

  it('rejects bad arguments and bad images with typed errors', async () => {
    const img = photo('skimage/astronaut.png');
    const bad: [() => Promise<unknown>, string][] = [
      [() => engine.detectPoses(img, { scoreThreshold: 2 }), 'INVALID_ARGUMENT'],
      [() => engine.detectPoses(img, { keypointThreshold: -0.1 }), 'INVALID_ARGUMENT'],
      [() => engine.detectPoses(img, { maxPoses: 0 }), 'INVALID_ARGUMENT'],
      [() => engine.detectPoses('x' as unknown as Buffer), 'INVALID_ARGUMENT'],
      [() => engine.detectObjects(img, { scoreThreshold: Number.NaN }), 'INVALID_ARGUMENT'],
      [() => engine.detectObjects(img, { maxObjects: 1.5 }), 'INVALID_ARGUMENT'],
      [() => engine.detectObjects(garbage()), 'UNSUPPORTED_FORMAT'],
      [() => engine.detectPoses(img.subarray(0, 600)), 'INVALID_IMAGE'],
      [() => engine.detectObjects(Buffer.alloc(0)), 'INVALID_IMAGE'],
    ];
    for (const [call, code] of bad) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(EngineError);
      expect((error as EngineError).code).toBe(code);
    }
  });

  it('an engine opened without the pose or object model says so', async () => {
    const bare = await openEngine({ workers: 1, poseModel: null, objectDetector: null, warmUp: false });
    try {
      await expect(bare.detectPoses(photo('skimage/astronaut.png'))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(bare.detectObjects(photo('skimage/astronaut.png'))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect((await bare.detectFaces(photo('skimage/astronaut.png'))).faces).toHaveLength(1);
    } finally {
      await bare.close();
    }
    await expect(openEngine({ objectDetector: 'yolo' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('BODY_25 layout', () => {
  it('exports the 24 bones as index pairs with a colour each', () => {
    expect(BODY_25_BONES).toHaveLength(24);
    const pairs = new Set<string>();
    for (const { pair, color } of BODY_25_BONES) {
      expect(pair).toHaveLength(2);
      for (const i of pair) {
        expect(Number.isInteger(i) && i >= 0 && i < 25).toBe(true);
      }
      expect(color).toMatch(/^[0-9a-f]{6}$/);
      pairs.add([...pair].sort().join('-'));
    }
    expect(pairs.size).toBe(24); // no bone twice
    expect(BODY_25_BONES[0]).toEqual({ pair: [1, 8], color: 'ff0055' });
    expect(BODY_25_BONES[23]).toEqual({ pair: [11, 24], color: '00ffff' });
    // a tree over the 25 points: every point reached from the neck
    const reached = new Set([1]);
    for (let grown = true; grown;) {
      grown = false;
      for (const { pair } of BODY_25_BONES) {
        const [a, b] = pair;
        if (reached.has(a) !== reached.has(b)) {
          reached.add(a).add(b);
          grown = true;
        }
      }
    }
    expect(reached.size).toBe(25);
    expect(MAX_POSES).toBe(6);
  });

  it('maps COCO keypoints: neck and mid hip as midpoints, feet and undetected points [0,0,0]', () => {
    const coco = COCO_KEYPOINTS.flatMap((_, i) => [10 * i, 100 + i, 0.9]);
    const at = (name: string) => 3 * COCO_KEYPOINTS.indexOf(name as (typeof COCO_KEYPOINTS)[number]);
    coco[at('left_shoulder') + 2] = 0.6;
    coco[at('right_ear') + 2] = 0.1; // below the threshold
    const body = cocoToBody25(coco, 0.3);
    const b = (name: string) => body[BODY_25_KEYPOINTS.indexOf(name as (typeof BODY_25_KEYPOINTS)[number])];
    expect(b('nose')).toEqual([0, 100, 0.9]);
    expect(b('right_shoulder')).toEqual([60, 106, 0.9]);
    expect(b('neck')).toEqual([55, 105.5, 0.6]);
    expect(b('mid_hip')).toEqual([115, 111.5, 0.9]);
    expect(b('right_ear')).toEqual([0, 0, 0]);
    for (const foot of ['left_big_toe', 'left_small_toe', 'left_heel', 'right_big_toe', 'right_small_toe', 'right_heel']) {
      expect(b(foot)).toEqual([0, 0, 0]);
    }
    // no neck without both shoulders
    coco[at('left_shoulder') + 2] = 0.2;
    expect(cocoToBody25(coco, 0.3)[1]).toEqual([0, 0, 0]);
  });
});

// Crowds and small people: the labelled persons of testkit/labels/objects.json (every person boxed on those photos).
describe("pose for every person: crops around the object detector's persons", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await sharedEngine({ workers: 1, faceEmbedder: null });
  });

  async function scoreAll(mode: PoseMode) {
    const labels = loadObjectLabels(ROOT);
    const total = { persons: 0, posed: 0, small: 0, smallPosed: 0, extra: 0 };
    for (const [file, labelled] of Object.entries(labels.photos)) {
      if (!labelled.personsComplete) continue;
      const { poses } = await engine.detectPoses(photo(file), { mode });
      const s = scorePoses(labelled, poses, poses.length);
      for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += s[k];
    }
    return total;
  }

  it('poses more of the labelled persons than one whole-image pass, small ones included, and adds few stray poses', async () => {
    const persons = await scoreAll('persons');
    const whole = await scoreAll('whole');
    expect(persons.persons).toBeGreaterThanOrEqual(50); // the set is as labelled, not emptied
    expect(persons.posed).toBeGreaterThan(whole.posed);
    expect(persons.posed / persons.persons).toBeGreaterThanOrEqual(0.8);
    expect(persons.smallPosed).toBeGreaterThan(whole.smallPosed);
    // On the 22 photos: 4 poses outside the labelled persons with yolov5s-320 int8 finding people (the default; 3 at
    // fp32: int8's margin is one more, test/int8-models.test.ts), 2 with yolov5s at 640 (docs/models.md, "Pose for
    // every person"). The int8 file computes in integers from its input, so this count is the same on every CPU.
    expect(persons.extra).toBeLessThanOrEqual(4);
  });

  it("is the default where the object model has a person class; 'whole' keeps the model's own limit of 6", async () => {
    const crowd = photo('dlib/faces/2008_002079.jpg'); // 10 people
    const byDefault = await engine.detectPoses(crowd);
    const persons = await engine.detectPoses(crowd, { mode: 'persons' });
    expect(byDefault.poses.map((p) => p.box)).toEqual(persons.poses.map((p) => p.box));
    expect(persons.poses.length).toBeGreaterThan(6);
    expect((await engine.detectPoses(crowd, { mode: 'whole' })).poses.length).toBeLessThanOrEqual(6);
    for (const p of persons.poses) expect(p.body25).toHaveLength(25);
  });

  it("times each model's stages apart: the person detector's, then the MoveNet passes (timings.stages)", async () => {
    const crowd = await engine.detectPoses(photo('dlib/faces/2008_002079.jpg'), { mode: 'persons' });
    const whole = await engine.detectPoses(photo('dlib/faces/2008_002079.jpg'), { mode: 'whole' });
    for (const [result, passes] of [
      [crowd, 2],
      [whole, 1],
    ] as const) {
      const { preprocessMs, inferenceMs, postprocessMs, stages } = result.timings;
      const s = stages!;
      expect(s['posePasses']).toBeGreaterThanOrEqual(passes);
      for (const stage of ['Preprocess', 'Inference', 'Postprocess'] as const) {
        for (const model of ['person', 'pose'] as const) expect(s[`${model}${stage}Ms`]).toBeGreaterThanOrEqual(0);
      }
      // the three sums are the two models' parts
      expect(s['personPreprocessMs']! + s['posePreprocessMs']!).toBeCloseTo(preprocessMs, 6);
      expect(s['personInferenceMs']! + s['poseInferenceMs']!).toBeCloseTo(inferenceMs, 6);
      expect(s['personPostprocessMs']! + s['posePostprocessMs']!).toBeCloseTo(postprocessMs, 6);
      expect(s['poseInferenceMs']).toBeGreaterThan(0);
    }
    expect(crowd.timings.stages!['personInferenceMs']).toBeGreaterThan(0);
    expect(whole.timings.stages!['personInferenceMs']).toBe(0); // no person detector in 'whole' mode
    expect(crowd.timings.stages!['posePasses']).toBeLessThanOrEqual(POSE_DEFAULTS.maxPosesPersons);
  });

  it("poses a person from a neighbour's crop where that crop shows them well, never giving one pose twice", async () => {
    // 2008_002079.jpg: 10 people, side by side and behind each other. A crop run for one person also poses another
    // when it holds their box with context, at 0.6 or more of the resolution of their own crop, and has a pose
    // matching their box (IoU >= 0.5): fewer MoveNet passes than poses.
    const crowd = await engine.detectPoses(photo('dlib/faces/2008_002079.jpg'), { mode: 'persons' });
    expect(crowd.poses.length).toBeGreaterThanOrEqual(9);
    expect(crowd.timings.stages!['posePasses']).toBeLessThan(crowd.poses.length);
    expect(new Set(crowd.poses.map((p) => JSON.stringify(p.keypoints))).size).toBe(crowd.poses.length);
    // One person alone: one pass.
    const one = await engine.detectPoses(photo('darknet/person.jpg'), { mode: 'persons' });
    expect([one.poses.length, one.timings.stages!['posePasses']]).toEqual([1, 1]);
  });

  it("poses a camera-sized JPEG decoded smaller as its PNG decoded whole, in the frame's own pixels", async () => {
    // A 1920x1080 JPEG is decoded at a quarter for the 320 px person detector. A tall person's crop has pixels enough
    // there; a person a quarter as tall needs a finer decode for the crop (native/pipelines/detect_poses.h). The PNG of
    // the same pixels is always decoded whole: the same person, each confident keypoint in the same place. At fp32:
    // int8 MoveNet moves a keypoint by up to 5% of the person's height for input changes this small, and by how
    // much depends on the CPU's int8 kernels. Cropping the small person from the quarter decode (blown up 2x)
    // moved its keypoints by 1.0% of its height on average, 2.2% at most (fp32, AVX2 EPYC, 2026-11-28).
    const fp32 = await openEngine({ workers: 1, precision: 'fp32', faceEmbedder: null, warmUp: false });
    try {
      for (const fill of [1, 0.25]) {
        const asJpeg = fittedJpeg(ROOT, 'darknet/person.jpg', 1920, 1080, fill);
        const [fromJpeg, fromPng] = [await fp32.detectPoses(asJpeg), await fp32.detectPoses(pngOfJpeg(asJpeg))];
        expect([fromJpeg.width, fromJpeg.height]).toEqual([1920, 1080]);
        expect(fromJpeg.poses).toHaveLength(1);
        expect(fromPng.poses).toHaveLength(1);
        const [a, b] = [fromJpeg.poses[0]!, fromPng.poses[0]!];
        const tall = b.box[3] - b.box[1];
        expect(tall, `fill ${fill}`).toBeGreaterThan(fill * 600); // in 1920x1080 pixels, not the decoded quarter's
        a.box.forEach((v, i) => expect(Math.abs(v - b.box[i]!), `fill ${fill}, box[${i}]`).toBeLessThanOrEqual(0.02 * tall));
        const moved = a.keypoints
          .map((k, i) => [k, b.keypoints[i]!] as const)
          .filter(([k, w]) => k.score >= 0.4 && w.score >= 0.4)
          .map(([k, w]) => Math.hypot(k.x - w.x, k.y - w.y) / tall);
        expect(moved.length, `fill ${fill}`).toBeGreaterThanOrEqual(10);
        expect(Math.max(...moved), `fill ${fill}: the most a keypoint moved`).toBeLessThanOrEqual(0.015);
        expect(moved.reduce((x, y) => x + y, 0) / moved.length, `fill ${fill}: the mean`).toBeLessThanOrEqual(0.006);
      }
    } finally {
      await fp32.close();
    }
  });

  it('finds people with yolov5s-320 beside a yolov5s by default, with the object model when told or when it is not a YOLOv5s, and with a person detector alone', async () => {
    expect(engine.models).toMatchObject({ objects: 'yolov5s', persons: 'yolov5s-320' });
    expect(engine.backend().runtimes['personDetector']).toBe(engine.backend().runtimes['objectDetector']);
    const crowd = photo('dlib/faces/2008_002079.jpg'); // 10 people
    const own = await openEngine({ workers: 1, faceEmbedder: null, personDetector: null, warmUp: false });
    const centernet = await openEngine({ workers: 1, faceEmbedder: null, objectDetector: 'centernet-384', warmUp: false });
    const alone = await openEngine({ workers: 1, faceEmbedder: null, objectDetector: null, personDetector: 'yolov5s-320', warmUp: false });
    try {
      expect(own.models).toMatchObject({ objects: 'yolov5s', persons: 'yolov5s' });
      expect(own.backend().runtimes['personDetector']).toBeUndefined();
      expect((await own.detectPoses(crowd)).poses.length).toBeGreaterThan(6);
      expect(centernet.models).toMatchObject({ objects: 'centernet-384', persons: 'centernet-384' }); // no YOLOv5 weights added
      // No object model at all: the person detector alone makes persons mode work, and is what finds the 10.
      expect(alone.models).toMatchObject({ objects: null, persons: 'yolov5s-320' });
      await expect(alone.detectObjects(crowd)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      const crops = await alone.detectPoses(crowd);
      expect(crops.poses.length).toBeGreaterThan(6);
      expect(crops.poses.map((p) => p.box)).toEqual((await engine.detectPoses(crowd)).poses.map((p) => p.box));
    } finally {
      await Promise.all([own.close(), centernet.close(), alone.close()]);
    }
    await expect(openEngine({ personDetector: 'yolo' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it("'persons' without an object model is a clear error; the default then is the whole-image pass", async () => {
    const noObjects = await openEngine({ workers: 1, objectDetector: null, faceEmbedder: null, warmUp: false });
    try {
      await expect(noObjects.detectPoses(photo('darknet/person.jpg'), { mode: 'persons' })).rejects.toThrow(/needs an object model/);
      expect((await noObjects.detectPoses(photo('darknet/person.jpg'))).poses).toHaveLength(1);
      await expect(noObjects.detectPoses(photo('darknet/person.jpg'), { mode: 'crowd' as PoseMode })).rejects.toThrow(/mode must be one of/);
    } finally {
      await noObjects.close();
    }
  });
});
