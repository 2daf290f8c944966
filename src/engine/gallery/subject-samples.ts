// Which samples each subject has, for an approximate gallery: once the graph has found a sample of a subject, every
// sample of that subject is re-ranked exactly (GalleryIndex.searchApproximate), so the match is that subject's
// nearest sample, as exact search answers it. A graph walk that reaches one photo of a person can stop before
// reaching the nearest of their other photos.

export class SubjectSamples {
  readonly #ids = new Map<string, number[]>();
  readonly #subjectOf = new Map<number, string>();

  /** Records `ids[i]` as a sample of `subjects[i]` (an id already here moves to its new subject). */
  set(ids: Float64Array, subjects: readonly string[]): void {
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const subject = subjects[i]!;
      const before = this.#subjectOf.get(id);
      if (before === subject) continue;
      if (before !== undefined) this.#drop(id, before);
      this.#subjectOf.set(id, subject);
      const list = this.#ids.get(subject);
      if (list) list.push(id);
      else this.#ids.set(subject, [id]);
    }
  }

  delete(ids: Float64Array): void {
    // Grouped by subject, so that removing all of a subject's many samples filters its list once.
    const gone = new Map<string, Set<number>>();
    for (const id of ids) {
      const subject = this.#subjectOf.get(id);
      if (subject === undefined) continue;
      this.#subjectOf.delete(id);
      const set = gone.get(subject);
      if (set) set.add(id);
      else gone.set(subject, new Set([id]));
    }
    for (const [subject, set] of gone) {
      const kept = this.#ids.get(subject)!.filter((id) => !set.has(id));
      if (kept.length > 0) this.#ids.set(subject, kept);
      else this.#ids.delete(subject);
    }
  }

  clear(): void {
    this.#ids.clear();
    this.#subjectOf.clear();
  }

  /** The sample ids of `subject` (empty if none). */
  of(subject: string): readonly number[] {
    return this.#ids.get(subject) ?? [];
  }

  #drop(id: number, subject: string): void {
    const list = this.#ids.get(subject)!;
    list[list.indexOf(id)] = list[list.length - 1]!;
    list.pop();
    if (list.length === 0) this.#ids.delete(subject);
  }
}
