// Recalibration of the accept threshold (105) and of the DeepStack confidence curve (src/server/deepstack/
// similarity.ts) on the camera-change evaluation set of recognition-eval.ts, with the calibration photos kept apart
// from the scored ones (per john: photos 1-3 enrolled, 4-7 calibrate, 8-11 scored; strangers: every other group
// photo calibrates). The default configuration (faceres int8, aligned, turned passes), nearest-sample rule.
//
// On the calibration half it derives the candidates: the open-set EER point, the highest threshold that names no
// calibration stranger, and the curve's width w (pooled variance / mean gap of the genuine and stranger distances,
// as tools/deepstack-confidence.ts derives it from pairs); on the scored half it counts, for the threshold in use
// and each candidate, strangers named and genuine probes not named right, and the same at DeepStack's 0.45 and 0.67
// under the curve in use and under the recalibrated one.
//
//   node dist/tools/recalibrate-recognition.js [--quick]     (after `node scripts/setup/setup.mjs --test`)
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { calibratedDistance, Engine } from '../src/index.js';
import { EER_DISTANCE } from '../src/engine/face-embedding.js';
import { CONFIDENCE_WIDTH, DEEPSTACK_RECOGNITION_THRESHOLD, distanceAtConfidence } from '../src/server/deepstack/similarity.js';
import { CAMERA_CHANGES } from './camera-changes.js';
import { evalSet } from './recognition-eval.js';
import { cosine, equalErrorRate } from '../testkit/face-verification.js';

interface Scored {
  subject: string | null;
  half: 'calibration' | 'scored';
  /** The nearest sample's subject and calibrated distance; null: no face found. */
  best: { subject: string; distance: number } | null;
}

const pct = (n: number, of: number) => `${n}/${of} (${((100 * n) / of).toFixed(1)}%)`;

/** Strangers named and genuine probes not named right when a probe is named at distance <= threshold. */
function at(scored: readonly Scored[], threshold: number): { strangers: string; genuine: string } {
  const strangers = scored.filter((s) => s.subject === null);
  const genuine = scored.filter((s) => s.subject !== null);
  const named = (s: Scored) => (s.best && s.best.distance <= threshold ? s.best.subject : null);
  return {
    strangers: pct(strangers.filter((s) => named(s) !== null).length, strangers.length),
    genuine: pct(genuine.filter((s) => named(s) !== s.subject).length, genuine.length),
  };
}

/** The logistic's width from distances: pooled variance / (stranger mean - genuine mean). */
function width(genuine: number[], strangers: number[]): number {
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  const sumSq = (v: number[]) => v.reduce((a, x) => a + (x - mean(v)) ** 2, 0);
  return (sumSq(genuine) + sumSq(strangers)) / (genuine.length + strangers.length - 2) / (mean(strangers) - mean(genuine));
}

/** The distance at which a logistic of width w centred at 105 (0.67 there) reaches `confidence`. */
function distanceAt(confidence: number, w: number): number {
  const odds = (1 - DEEPSTACK_RECOGNITION_THRESHOLD) / DEEPSTACK_RECOGNITION_THRESHOLD;
  return EER_DISTANCE + w * Math.log((1 - confidence) / confidence / odds);
}

async function main(): Promise<void> {
  const changes = process.argv.includes('--quick') ? CAMERA_CHANGES.slice(0, 2) : CAMERA_CHANGES;
  const engine = await Engine.open({ poseModel: null, objectDetector: null });
  try {
    const set = await evalSet(engine, changes);
    const scale = engine.faceEmbedder()!.distanceScale;
    const gallery: { subject: string; embedding: Float32Array }[] = [];
    for (const e of set.enrolled) {
      const r = await engine.embedFace(e.bytes);
      if (r.embedding) gallery.push({ subject: e.subject, embedding: r.embedding });
    }
    const scored: Scored[] = [];
    for (const p of set.probes) {
      const r = await engine.embedFace(p.bytes);
      let best: Scored['best'] = null;
      for (const g of r.embedding ? gallery : []) {
        const d = calibratedDistance(cosine(r.embedding!, g.embedding), scale);
        if (!best || d < best.distance) best = { subject: g.subject, distance: d };
      }
      scored.push({ subject: p.subject, half: p.half, best });
    }
    const calibration = scored.filter((s) => s.half === 'calibration');
    const test = scored.filter((s) => s.half === 'scored');
    const genuine = calibration.filter((s) => s.subject !== null && s.best?.subject === s.subject).map((s) => s.best!.distance);
    const rejected = calibration.filter((s) => s.subject !== null && s.best?.subject !== s.subject).length;
    const strangers = calibration.filter((s) => s.subject === null && s.best).map((s) => s.best!.distance);
    const eer = equalErrorRate([...genuine, ...Array<number>(rejected).fill(Infinity)], strangers);
    const nearestStranger = Math.min(...strangers);
    const w = width(genuine, strangers);

    const info = engine.faceEmbedder()!;
    console.log(
      `CPU: ${os.cpus()[0]?.model ?? 'unknown'}, ${os.cpus().length} cores; ${new Date().toISOString()}; ${info.model} ${engine.backend().precisions['faceEmbedder']}`,
    );
    console.log(
      `calibration half: ${genuine.length + rejected} genuine probes (${rejected} not found or named wrong), ${strangers.length} strangers; ` +
        `genuine distance max ${Math.max(...genuine).toFixed(1)}, nearest stranger ${nearestStranger.toFixed(1)}; open-set EER ${(eer.eer * 100).toFixed(1)}% at ${eer.threshold.toFixed(1)}; ` +
        `w = ${w.toFixed(2)} (in use: ${CONFIDENCE_WIDTH})`,
    );
    console.log('\n| threshold (distance) | from | scored half: strangers named | genuine not named right |');
    console.log('|---|---|---|---|');
    const rows: [string, number][] = [
      ['in use (EER of the johns pairs)', EER_DISTANCE],
      ['DeepStack 0.45 on the curve in use', distanceAtConfidence(0.45)],
      ['calibration half: open-set EER point', eer.threshold],
      ['calibration half: just under its nearest stranger', nearestStranger - 0.05],
    ];
    for (const [from, t] of rows) {
      const r = at(test, t);
      console.log(`| ${t.toFixed(1)} | ${from} | ${r.strangers} | ${r.genuine} |`);
    }
    console.log('\n| DeepStack curve | min_confidence | distance it accepts up to | scored half: strangers named | genuine not named right |');
    console.log('|---|---|---|---|---|');
    for (const [curve, width_] of [
      [`in use, w = ${CONFIDENCE_WIDTH}`, CONFIDENCE_WIDTH],
      [`recalibrated, w = ${w.toFixed(2)}`, w],
    ] as const) {
      for (const c of [0.45, DEEPSTACK_RECOGNITION_THRESHOLD]) {
        const d = distanceAt(c, width_);
        const r = at(test, d);
        console.log(`| ${curve} | ${c} | ${d.toFixed(1)} | ${r.strangers} | ${r.genuine} |`);
      }
    }
  } finally {
    await engine.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
