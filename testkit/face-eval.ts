// Recall / precision of the face detector on real photos: dlib's annotated PASCAL VOC group
// photos (43 faces) for recall and box overlap, faceless photos for false positives.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DetectFacesOptions, Engine } from '../src/index.js';
import { addMatches, matchDetections, parseImglabXml, type MatchResult, type Rect } from './face-annotations.js';

/** Photos with no human face in them (animals, objects, scenery), from the test data. */
export const FACELESS_PHOTOS = [
  'darknet/dog.jpg',
  'darknet/horses.jpg',
  'darknet/eagle.jpg',
  'darknet/giraffe.jpg',
  'darknet/kite.jpg',
  'skimage/coffee.png',
  'skimage/chelsea.png',
  'skimage/rocket.jpg',
  'skimage/motorcycle_left.png',
  'dlib/faces/dogs.jpg',
];

export const ANNOTATION_FILES = ['dlib/faces/training.xml', 'dlib/faces/testing.xml'];

export interface FaceEvalResult {
  faces: number;
  recall: number;
  precision: number;
  meanIou: number;
  /** Detections on FACELESS_PHOTOS. */
  facelessDetections: number;
  match: MatchResult;
}

export async function evaluateFaceDetector(engine: Engine, dataDir: string, options: DetectFacesOptions, minIou = 0.4): Promise<FaceEvalResult> {
  let match: MatchResult = { truePositives: 0, falsePositives: 0, falseNegatives: 0, ious: [] };
  for (const xml of ANNOTATION_FILES) {
    for (const image of parseImglabXml(join(dataDir, xml))) {
      const found = await engine.detectFaces(readFileSync(join(dataDir, 'dlib/faces', image.file)), options);
      const rects = found.faces.map((f) => f.rect as Rect);
      match = addMatches(match, matchDetections(rects, image.boxes, minIou));
    }
  }
  let facelessDetections = 0;
  for (const photo of FACELESS_PHOTOS) {
    facelessDetections += (await engine.detectFaces(readFileSync(join(dataDir, photo)), options)).faces.length;
  }
  const faces = match.truePositives + match.falseNegatives;
  const detected = match.truePositives + match.falsePositives;
  return {
    faces,
    recall: match.truePositives / faces,
    precision: detected ? match.truePositives / detected : 1,
    meanIou: match.ious.reduce((a, b) => a + b, 0) / Math.max(1, match.ious.length),
    facelessDetections,
    match,
  };
}
