// The gallery's update window (src/gallery/update-window.ts): rebuilds one after another, changes held while it is
// open, and a rebuild that reads first: closed while it reads, its changes applied at once and again after it.

import { describe, expect, it } from 'vitest';
import { UpdateWindow } from '../src/gallery/update-window.js';

/** A promise and the functions that settle it. */
function deferred<T>(): { promise: Promise<T>; resolve(value: T): void; reject(e: Error): void } {
  let resolve!: (value: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('the gallery update window', () => {
  it('opens at once for a rebuild with no read, holds changes until the last queued one is done, in order', async () => {
    const applied: string[] = [];
    const window = new UpdateWindow<string>((c) => applied.push(c));
    const [first, second] = [deferred<void>(), deferred<void>()];
    const order: string[] = [];
    const one = window.run(async () => (order.push('one'), first.promise));
    const two = window.run(async () => (order.push('two'), second.promise));
    expect(window.isOpen).toBe(true);
    window.apply('x');
    window.apply('y');
    await turn();
    expect(order).toEqual(['one']); // never two at once
    first.resolve();
    await one;
    await turn();
    expect([window.isOpen, applied, order]).toEqual([true, [], ['one', 'two']]);
    second.resolve();
    await two;
    expect([window.isOpen, applied]).toEqual([false, ['x', 'y']]);
    window.apply('z');
    expect(applied).toEqual(['x', 'y', 'z']);
  });

  it('stays closed while a rebuild reads, applies changes at once and again after its work, then any held ones', async () => {
    const applied: string[] = [];
    const window = new UpdateWindow<string>((c) => applied.push(c));
    const read = deferred<string>();
    const work = deferred<void>();
    let input: string | null = null;
    const done = window.run(
      async (what: string) => {
        input = what;
        return work.promise;
      },
      () => read.promise,
    );
    await turn();
    expect(window.isOpen).toBe(false);
    window.apply('during-read');
    expect(applied).toEqual(['during-read']);
    read.resolve('snapshot');
    await turn();
    expect([window.isOpen, input]).toEqual([true, 'snapshot']);
    window.apply('during-work');
    expect(applied).toEqual(['during-read']);
    work.resolve();
    await done;
    expect([window.isOpen, applied]).toEqual([false, ['during-read', 'during-read', 'during-work']]);
    window.apply('after');
    expect(applied.at(-1)).toBe('after');
    expect(applied.filter((c) => c === 'after')).toHaveLength(1); // recorded only during a read
  });

  it('waits for earlier rebuilds before reading, and never opens for a read that fails', async () => {
    const applied: string[] = [];
    const window = new UpdateWindow<string>((c) => applied.push(c));
    const load = deferred<void>();
    let readStarted = false;
    const loading = window.run(() => load.promise);
    const failing = window.run(
      async () => {
        applied.push('work ran');
      },
      async () => {
        readStarted = true;
        throw new Error('Redis: Command timed out');
      },
    );
    await turn();
    expect([readStarted, window.isOpen]).toEqual([false, true]);
    load.resolve();
    await loading;
    await expect(failing).rejects.toThrow('Command timed out');
    expect([readStarted, window.isOpen, applied]).toEqual([true, false, []]);
    window.apply('next');
    expect(applied).toEqual(['next']);
    await window.settled;
  });

  it('holds a change that comes while a rebuild queued behind a read opened the window, after the read ones', async () => {
    const applied: string[] = [];
    const window = new UpdateWindow<string>((c) => applied.push(c));
    const read = deferred<string>();
    const resync = window.run(
      async () => undefined,
      () => read.promise,
    );
    await turn();
    window.apply('read-1');
    const importing = window.run(async () => undefined); // opens now, behind the resync
    window.apply('held-2');
    read.resolve('snapshot');
    await Promise.all([resync, importing]);
    expect(applied).toEqual(['read-1', 'read-1', 'held-2']);
  });
});
