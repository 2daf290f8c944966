// An image no larger than the person detector's input (yolov5s-320) runs the objects route on that detector, the
// same weights at 320, instead of upscaling it into yolov5s at 640 (Frigate's regions are 320x320). Checked with
// the real addon: the routing (exactly the 320 model's answer at or under 320 px, exactly the 640 model's above),
// and the accuracy that justifies it, on the labelled object set scaled to 320 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, type DetectedObject } from '../src/index.js';
import { loadObjectLabels, scorePhoto, sumScores, type LabelledPhoto, type Rect } from '../testkit/object-labels.js';
import { scaledJpeg } from '../testkit/vga-photos.js';
import { ROOT, sharedEngine } from './helpers.js';

const SMALL_SIDE = 320;
const labels = loadObjectLabels(ROOT);

let routed: Engine; // the default pairing: yolov5s for objects, yolov5s-320 finding people for pose
let at640: Engine;
let at320: Engine;

beforeAll(async () => {
  // Nothing here is timed: no warm-up. The default pairing is pose-object-engine.test.ts's shared engine.
  routed = await sharedEngine({ workers: 1, faceEmbedder: null });
  at640 = await Engine.open({ workers: 1, objectDetector: 'yolov5s', personDetector: null, poseModel: null, faceEmbedder: null, warmUp: false });
  at320 = await Engine.open({ workers: 1, objectDetector: 'yolov5s-320', personDetector: null, poseModel: null, faceEmbedder: null, warmUp: false });
}, 120_000);

afterAll(async () => {
  await Promise.all([at640?.close(), at320?.close()]);
});

const boxes = (objects: DetectedObject[]) => objects.map((o) => [o.className, o.score, ...o.rect]);

describe('small images on the objects route', () => {
  it('run on the 320 detector at or under 320 px on each side, and on the 640 model above', async () => {
    for (const side of [SMALL_SIDE, SMALL_SIDE + 2]) {
      const { bytes, width, height } = scaledJpeg(ROOT, 'darknet/dog.jpg', side);
      expect(Math.max(width, height)).toBe(side);
      const got = boxes((await routed.detectObjects(bytes)).objects);
      expect(got.length).toBeGreaterThan(0);
      const small = boxes((await at320.detectObjects(bytes)).objects);
      const large = boxes((await at640.detectObjects(bytes)).objects);
      expect(small).not.toEqual(large); // else this check could not tell them apart
      expect(got).toEqual(side <= SMALL_SIDE ? small : large);
    }
  });

  it('find on the labelled set scaled to 320 px what yolov5s at 640 finds, within the int8 margins', async () => {
    const scores = { routed: [] as ReturnType<typeof scorePhoto>[], at640: [] as ReturnType<typeof scorePhoto>[] };
    for (const [file, photo] of Object.entries(labels.photos)) {
      const { bytes, scale } = scaledJpeg(ROOT, file, SMALL_SIDE);
      const scaleRect = (r: Rect) => r.map((v) => v * scale) as Rect;
      const scaled: LabelledPhoto = {
        ...photo,
        boxes: photo.boxes.map((b) => ({ ...b, rect: scaleRect(b.rect) })),
        ignore: photo.ignore?.map(scaleRect),
      };
      scores.routed.push(scorePhoto(scaled, (await routed.detectObjects(bytes, { maxObjects: 1000 })).objects, 0));
      scores.at640.push(scorePhoto(scaled, (await at640.detectObjects(bytes, { maxObjects: 1000 })).objects, 0));
    }
    const routedSum = sumScores(scores.routed);
    const at640Sum = sumScores(scores.at640);
    console.log(`labelled objects at ${SMALL_SIDE} px: routed (yolov5s-320)`, routedSum, 'yolov5s at 640', at640Sum);
    expect(routedSum.found).toBeGreaterThanOrEqual(at640Sum.found - 1);
    expect(routedSum.wrongTop).toBeLessThanOrEqual(at640Sum.wrongTop);
    expect(routedSum.unmatched).toBeLessThanOrEqual(at640Sum.unmatched + 1);
  });
});
