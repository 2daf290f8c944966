// Box arithmetic the scorers, the benches and the decode tests share. A box is [x1, y1, x2, y2].

export function area(r: readonly number[]): number {
  return Math.max(0, r[2]! - r[0]!) * Math.max(0, r[3]! - r[1]!);
}

export function intersection(a: readonly number[], b: readonly number[]): number {
  return area([Math.max(a[0]!, b[0]!), Math.max(a[1]!, b[1]!), Math.min(a[2]!, b[2]!), Math.min(a[3]!, b[3]!)]);
}

/** Intersection over union; 0 for boxes that do not overlap (or have no area). */
export function iou(a: readonly number[], b: readonly number[]): number {
  const inter = intersection(a, b);
  return inter === 0 ? 0 : inter / (area(a) + area(b) - inter);
}
