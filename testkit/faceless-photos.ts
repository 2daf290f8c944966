// The faceless photos: test photos with no human face in them (scripts/setup/faceless-photos.mjs fetches most of them;
// the rest are older test photos looked at for the same). The face routes must find no face on any (issue 48).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Folders of test/data whose every photo is faceless (scripts/setup/faceless-photos.mjs). */
const FACELESS_FOLDERS = ['tuxpaint/', 'sklearn/', 'mate/', 'ukui/', 'lomiri/'];
/** Older test photos without a face (the others show people, or a painted face: darknet/scream.jpg). */
const FACELESS_OTHERS = [
  'darknet/dog.jpg',
  'darknet/eagle.jpg',
  'darknet/giraffe.jpg',
  'darknet/horses.jpg',
  'skimage/chelsea.png',
  'skimage/coffee.png',
  'skimage/motorcycle_left.png',
  'skimage/rocket.jpg',
];

/** Every faceless photo, as paths relative to the test photos folder, sorted. */
export function facelessPhotos(root: string): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'test', 'data.manifest.json'), 'utf8')) as Record<string, string>;
  const names = Object.keys(manifest).filter((n) => FACELESS_FOLDERS.some((f) => n.startsWith(f)) || FACELESS_OTHERS.includes(n));
  return names.sort();
}
