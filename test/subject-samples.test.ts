// SubjectSamples: the subject -> sample ids map an approximate gallery keeps, so that every sample of the subject
// the graph found is re-ranked exactly (GalleryIndex.searchApproximate).
import { describe, expect, it } from 'vitest';
import { SubjectSamples } from '../src/engine/gallery/subject-samples.js';

const ids = (...list: number[]) => Float64Array.from(list);
const sorted = (list: readonly number[]) => [...list].sort((a, b) => a - b);

describe('SubjectSamples', () => {
  it("keeps each subject's ids through adds, a move to another subject, removes and clear", () => {
    const s = new SubjectSamples();
    s.set(ids(1, 2, 3, 4), ['ann', 'ann', 'bob', 'ann']);
    expect(sorted(s.of('ann'))).toEqual([1, 2, 4]);
    expect(s.of('bob')).toEqual([3]);
    s.set(ids(2, 1), ['bob', 'ann']); // 2 re-enrolled under bob; 1 again under ann: no duplicate
    expect(sorted(s.of('ann'))).toEqual([1, 4]);
    expect(sorted(s.of('bob'))).toEqual([2, 3]);
    s.delete(ids(3, 99)); // 99 was never there
    expect(s.of('bob')).toEqual([2]);
    s.delete(ids(2));
    expect(s.of('bob')).toEqual([]);
    s.set(ids(5), ['bob']);
    expect(s.of('bob')).toEqual([5]); // a subject emptied and enrolled again starts afresh
    s.clear();
    expect(s.of('ann')).toEqual([]);
  });

  it('removes many samples of one subject at once, keeping the others', () => {
    const s = new SubjectSamples();
    const n = 50_000;
    s.set(
      Float64Array.from({ length: n }, (_, i) => i),
      Array.from({ length: n }, (_, i) => (i % 10 === 0 ? 'kept' : 'big')),
    );
    s.delete(Float64Array.from({ length: n }, (_, i) => i).filter((i) => i % 10 !== 0 && i % 7 !== 0));
    expect(s.of('kept').length).toBe(n / 10);
    expect(sorted(s.of('big'))).toEqual(Array.from({ length: n }, (_, i) => i).filter((i) => i % 10 !== 0 && i % 7 === 0));
  });
});
