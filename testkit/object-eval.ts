// Objects that must be found in the darknet test photos, with where their centre lies (fractions of the
// image width and height): the object test's expectations, and the bench's measure of each input size.
import type { DetectedObject } from '../src/index.js';

export interface ExpectedObject {
  /** Any of these classes will do (centernet calls the pickup in dog.jpg a car or a truck). */
  classes: string[];
  x: [number, number];
  y: [number, number];
}

export const EXPECTED_OBJECTS: [string, ExpectedObject[]][] = [
  [
    'darknet/dog.jpg',
    [
      { classes: ['dog'], x: [0.1, 0.45], y: [0.45, 0.9] },
      { classes: ['bicycle'], x: [0.25, 0.65], y: [0.3, 0.8] },
      { classes: ['car', 'truck'], x: [0.6, 0.95], y: [0.1, 0.35] },
    ],
  ],
  [
    'darknet/person.jpg',
    [
      { classes: ['person'], x: [0.28, 0.45], y: [0.3, 0.75] },
      { classes: ['dog'], x: [0.05, 0.35], y: [0.55, 0.9] },
      { classes: ['horse'], x: [0.6, 0.95], y: [0.3, 0.8] },
    ],
  ],
  ['darknet/giraffe.jpg', [{ classes: ['giraffe'], x: [0.2, 0.8], y: [0.1, 0.9] }]],
  ['darknet/eagle.jpg', [{ classes: ['bird'], x: [0.2, 0.8], y: [0.2, 0.8] }]],
];

/** Whether `o` is one of the expected classes with its centre in the expected place. */
export function matchesExpected(o: DetectedObject, e: ExpectedObject, width: number, height: number): boolean {
  const cx = (o.rect[0] + o.rect[2]) / 2 / width;
  const cy = (o.rect[1] + o.rect[3]) / 2 / height;
  return e.classes.includes(o.className) && cx >= e.x[0] && cx <= e.x[1] && cy >= e.y[0] && cy <= e.y[1];
}
