// A small self-contained SVG histogram of two distributions (genuine vs impostor distances) with a marked
// threshold, for docs/models.md. No plotting library: a few rects, lines and labels.

export interface HistogramSeries {
  label: string;
  color: string;
  values: number[];
}

export interface HistogramOptions {
  title: string;
  xLabel: string;
  min: number;
  max: number;
  binWidth: number;
  threshold?: { value: number; label: string };
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function svgHistogram(series: HistogramSeries[], o: HistogramOptions): string {
  const W = 720;
  const H = 360;
  const m = { l: 56, r: 16, t: 56, b: 64 };
  const bins = Math.ceil((o.max - o.min) / o.binWidth);
  // Share of each series per bin, so series of different sizes compare.
  const shares = series.map((s) => {
    const counts = new Array<number>(bins).fill(0);
    for (const v of s.values) counts[Math.min(bins - 1, Math.max(0, Math.floor((v - o.min) / o.binWidth)))]! += 1;
    return counts.map((c) => c / Math.max(1, s.values.length));
  });
  const top = Math.max(0.01, ...shares.flat());
  const yMax = Math.ceil(top * 20) / 20; // next 5 %
  const x = (v: number) => m.l + ((v - o.min) / (o.max - o.min)) * (W - m.l - m.r);
  const y = (share: number) => H - m.b - (share / yMax) * (H - m.t - m.b);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(o.title)}</text>`,
  ];
  for (let t = 0; t <= yMax + 1e-9; t += yMax / 5) {
    parts.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" stroke="#ddd"/>`);
    parts.push(`<text x="${m.l - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${Math.round(t * 100)}%</text>`);
  }
  const step = (o.max - o.min) / 10;
  for (let v = o.min; v <= o.max + 1e-9; v += step) {
    parts.push(`<text x="${x(v).toFixed(1)}" y="${H - m.b + 16}" text-anchor="middle">${Math.round(v)}</text>`);
  }
  parts.push(`<text x="${W / 2}" y="${H - m.b + 34}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  parts.push(`<text transform="translate(14 ${H / 2}) rotate(-90)" text-anchor="middle">share of pairs per bin</text>`);
  series.forEach((s, i) => {
    shares[i]!.forEach((share, b) => {
      if (share === 0) return;
      const x0 = x(o.min + b * o.binWidth);
      const x1 = x(o.min + (b + 1) * o.binWidth);
      parts.push(
        `<rect x="${x0.toFixed(1)}" y="${y(share).toFixed(1)}" width="${(x1 - x0 - 1).toFixed(1)}" height="${(H - m.b - y(share)).toFixed(1)}" fill="${s.color}" fill-opacity="0.55"/>`,
      );
    });
    // Legend: one row under the title, above the plot area, so it never hides a bar.
    const lx = m.l + i * 260;
    parts.push(`<rect x="${lx}" y="30" width="12" height="12" fill="${s.color}" fill-opacity="0.55"/>`);
    parts.push(`<text x="${lx + 18}" y="40">${esc(s.label)}</text>`);
  });
  parts.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${H - m.b}" y2="${H - m.b}" stroke="black"/>`);
  if (o.threshold) {
    const tx = x(o.threshold.value).toFixed(1);
    parts.push(`<line x1="${tx}" x2="${tx}" y1="${m.t}" y2="${H - m.b}" stroke="black" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${Number(tx) + 4}" y="${m.t + 12}">${esc(o.threshold.label)}</text>`);
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
