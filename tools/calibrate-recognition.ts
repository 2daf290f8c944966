// Calibration of the recognition distance on identity-labelled photos (dlib's examples/johns: 5 people x 11).
// For each embedding model and crop margin: embeds every photo, scores all genuine and impostor pairs, finds the
// equal error rate (EER). For each model's best margin, the distance scale k makes the EER threshold 105:
// distance = (1 - cosine) x k. Prints the tables, writes the plot of docs/models.md (docs/recognition-distances.svg) for
// the default model, and with --write stores cropScale and distanceScale in models/manifest.json.
//
//   node dist/tools/calibrate-recognition.js [--write] [--models a,b]     (after `node scripts/setup/setup.mjs --test`)
// With --alignment, instead: the default model with and without face alignment, on faces turned in the image plane
// and on the upright pairs (tools/rotated-recognition.ts).
//   node dist/tools/calibrate-recognition.js --alignment [--alignment-cost: only what alignment costs an upright face]
// With --faceless: the faceless photos given a face by each face route, and the turned faces found (issue 48).
//   node dist/tools/calibrate-recognition.js --faceless
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calibratedDistance, Engine, ENGINE_DEFAULTS, FACE_EMBEDDER_MODELS, type FaceEmbedderModel } from '../src/index.js';
import { errorRates, loadJohns, verificationReport, type VerificationReport } from '../testkit/face-verification.js';
import { ALIGNMENT_MODES, facelessFaces, noFaceMs, rotatedRecognition, uprightCostMs, uprightErrorRates } from './rotated-recognition.js';
import { facelessPhotos } from '../testkit/faceless-photos.js';
import { svgHistogram } from './svg-histogram.js';

export const UNKNOWN_THRESHOLD = 105;
export const CROP_SCALES = [1.0, 1.2, 1.4, 1.6, 1.8];

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const pct = (v: number) => `${(v * 100).toFixed(2)}%`;

export interface CalibrationRow {
  model: FaceEmbedderModel;
  cropScale: number;
  report: VerificationReport;
}

/** The models `--models a,b` names (default: every embedder). */
function chosenModels(): FaceEmbedderModel[] {
  const at = process.argv.indexOf('--models');
  if (at < 0) return [...FACE_EMBEDDER_MODELS];
  const names = (process.argv[at + 1] ?? '').split(',');
  const unknown = names.filter((n) => !(FACE_EMBEDDER_MODELS as readonly string[]).includes(n));
  if (unknown.length > 0) throw new Error(`--models: unknown ${unknown.join(', ')} (known: ${FACE_EMBEDDER_MODELS.join(', ')})`);
  return names as FaceEmbedderModel[];
}

export async function calibrate(dataDir: string, models: readonly FaceEmbedderModel[] = FACE_EMBEDDER_MODELS): Promise<CalibrationRow[]> {
  const photos = loadJohns(dataDir);
  const rows: CalibrationRow[] = [];
  for (const model of models) {
    const engine = await Engine.open({ faceEmbedder: model });
    for (const cropScale of CROP_SCALES) rows.push({ model, cropScale, report: await verificationReport(engine, photos, { cropScale }) });
    await engine.close();
  }
  return rows;
}

async function alignmentCost(engine: Engine): Promise<void> {
  const runs = 300;
  const { box, aligned } = await uprightCostMs(engine, root, runs);
  console.log(`\n| recognizeFace, 640x480 face (upright), 1 worker, median of ${runs} interleaved | ms |`);
  console.log('|---|---|');
  console.log(`| box crop (before) | ${box.toFixed(2)} |`);
  console.log(`| aligned | ${aligned.toFixed(2)} |`);
}

async function alignmentReport(): Promise<void> {
  const dataDir = join(root, 'test', 'data');
  const engine = await Engine.open({ workers: 1 });
  if (process.argv.includes('--alignment-cost')) {
    await alignmentCost(engine);
    return engine.close();
  }
  const info = engine.faceEmbedder()!;
  console.log(`${info.model} ${info.version}, crop margin ${info.cropScale}, distance scale ${info.distanceScale}\n`);
  console.log('| cut | turned (both ways) | queries | no face found | rank-1 | named right under 105 |');
  console.log('|---|---|---|---|---|---|');
  for (const mode of ALIGNMENT_MODES) {
    for (const r of await rotatedRecognition(engine, dataDir, mode)) {
      const share = (n: number) => `${n}/${r.queries} (${((100 * n) / r.queries).toFixed(0)}%)`;
      console.log(`| ${r.mode} | ${r.degrees}° | ${r.queries} | ${r.noFace} | ${share(r.rank1)} | ${share(r.namedUnder105)} |`);
    }
  }
  console.log('\n| cut | pairs (genuine / impostor) | EER | cosine distance at EER | FAR at 105 | FRR at 105 |');
  console.log('|---|---|---|---|---|---|');
  for (const mode of ALIGNMENT_MODES.slice(0, 2)) {
    const r = await uprightErrorRates(engine, dataDir, mode.options);
    console.log(
      `| ${mode.name} | ${r.genuinePairs} / ${r.impostorPairs} | ${pct(r.eer)} | ${r.eerThreshold.toFixed(4)} | ${pct(r.at105.far)} | ${pct(r.at105.frr)} |`,
    );
  }
  console.log('\n| photo without a face (skimage/rocket.jpg), embedFace median of 40 | ms |');
  console.log('|---|---|');
  for (const mode of [ALIGNMENT_MODES[1]!, ALIGNMENT_MODES[2]!]) {
    await noFaceMs(engine, dataDir, mode.options, 5); // warm-up
    console.log(`| ${mode.name} | ${(await noFaceMs(engine, dataDir, mode.options, 40)).toFixed(1)} |`);
  }
  await alignmentCost(engine);
  await engine.close();
}

/** Faceless photos given a face on each face route, then the turned faces of the default mode (issue 48). */
async function facelessReport(): Promise<void> {
  const dataDir = join(root, 'test', 'data');
  const engine = await Engine.open({ workers: 1 });
  const r = await facelessFaces(engine, dataDir, facelessPhotos(root));
  const listed = (names: string[]) => `${names.length} of ${r.photos}${names.length ? `: ${names.join(', ')}` : ''}`;
  console.log('| face route (engine call) | faceless photos with a face |');
  console.log('|---|---|');
  console.log(`| /detector/detect/ (detectFaces) | ${listed(r.detector)} |`);
  console.log(`| recognition and enrolment (embedFace) | ${listed(r.recognition)} |`);
  console.log(`| embedFace without the turned passes | ${listed(r.withoutTurnedPasses)} |`);
  console.log(`| of recognition's, not a face the detector route reports (box and score) | ${listed(r.notTheDetectors)} |`);
  console.log('\n| cut | turned (both ways) | queries | no face found | rank-1 | named right under 105 |');
  console.log('|---|---|---|---|---|---|');
  for (const row of await rotatedRecognition(engine, dataDir, ALIGNMENT_MODES[2]!)) {
    const share = (n: number) => `${n}/${row.queries} (${((100 * n) / row.queries).toFixed(0)}%)`;
    console.log(`| ${row.mode} | ${row.degrees}° | ${row.queries} | ${row.noFace} | ${share(row.rank1)} | ${share(row.namedUnder105)} |`);
  }
  await engine.close();
}

async function main(): Promise<void> {
  if (process.argv.includes('--faceless')) return facelessReport();
  if (process.argv.includes('--alignment') || process.argv.includes('--alignment-cost')) return alignmentReport();
  const write = process.argv.includes('--write');
  const models = chosenModels();
  const rows = await calibrate(join(root, 'test', 'data'), models);
  console.log(
    '| model | crop margin | photos without a face | genuine pairs | impostor pairs | genuine mean / max | impostor mean / min | EER | cosine distance at EER |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const { model, cropScale, report: r } of rows) {
    console.log(
      `| ${model} | ${cropScale.toFixed(1)} | ${r.missed.length} | ${r.genuinePairs} | ${r.impostorPairs} | ` +
        `${mean(r.genuine).toFixed(3)} / ${Math.max(...r.genuine).toFixed(3)} | ${mean(r.impostor).toFixed(3)} / ${Math.min(...r.impostor).toFixed(3)} | ` +
        `${pct(r.eer)} | ${r.eerThreshold.toFixed(4)} |`,
    );
  }

  const manifestPath = join(root, 'models', 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
    models: Record<string, { recognition?: { cropScale: number; distanceScale: number } }>;
  };
  console.log('\n| model | chosen margin | EER | k = 105 / distance at EER | FAR at 105 | FRR at 105 |');
  console.log('|---|---|---|---|---|---|');
  for (const model of models) {
    // Lowest EER; on a tie, the smaller margin (listed first).
    const best = rows.filter((r) => r.model === model).reduce((a, b) => (b.report.eer < a.report.eer - 1e-12 ? b : a));
    const k = Math.round((UNKNOWN_THRESHOLD / best.report.eerThreshold) * 100) / 100;
    const at105 = errorRates(best.report.genuine, best.report.impostor, UNKNOWN_THRESHOLD / k);
    console.log(`| ${model} | ${best.cropScale.toFixed(1)} | ${pct(best.report.eer)} | ${k} | ${pct(at105.far)} | ${pct(at105.frr)} |`);
    if (write) manifest.models[model]!.recognition = { cropScale: best.cropScale, distanceScale: k };

    if (model === ENGINE_DEFAULTS.faceEmbedder) {
      const toDistance = (d: number) => calibratedDistance(1 - d, k);
      const svg = svgHistogram(
        [
          { label: `same person (${best.report.genuinePairs} pairs)`, color: '#2a9d3f', values: best.report.genuine.map(toDistance) },
          { label: `different people (${best.report.impostorPairs} pairs)`, color: '#d1495b', values: best.report.impostor.map(toDistance) },
        ],
        {
          title: `${model} (crop margin ${best.cropScale}) on dlib's johns, 5 people x 11 photos: EER ${pct(best.report.eer)}`,
          xLabel: 'confidence (calibrated distance; clients treat > 105 as Unknown)',
          min: 0,
          max: 250,
          binWidth: 5,
          threshold: { value: UNKNOWN_THRESHOLD, label: `105 (FAR ${pct(at105.far)}, FRR ${pct(at105.frr)})` },
        },
      );
      mkdirSync(join(root, 'docs'), { recursive: true });
      writeFileSync(join(root, 'docs', 'recognition-distances.svg'), svg);
      console.log(`\nwrote docs/recognition-distances.svg (${model})`);
    }
  }
  if (write) {
    writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    console.log(
      'wrote models/manifest.json (recognition.cropScale, recognition.distanceScale); run `node scripts/setup/setup.mjs` to refresh models/onnx',
    );
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
