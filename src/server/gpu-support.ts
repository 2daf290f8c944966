// "gpu_support" of the original answers: true exactly when the nets of the route ran on a GPU, CUDA (every net) or
// the Vulkan GPU (the nets the GPU check put there and that have not failed there since: docs/gpu.md).

import type { BackendInfo, NetKey } from '../engine/types.js';

export function onGpu(backend: Pick<BackendInfo, 'backend' | 'devices'>, nets: readonly NetKey[]): boolean {
  if (backend.backend === 'cuda') return true;
  const loaded = nets.filter((key) => backend.devices[key] !== undefined);
  return loaded.length > 0 && loaded.every((key) => backend.devices[key] === 'gpu');
}

/** Any loaded net on a GPU. */
export function anyOnGpu(backend: Pick<BackendInfo, 'backend' | 'devices'>): boolean {
  return backend.backend === 'cuda' || Object.values(backend.devices).includes('gpu');
}
