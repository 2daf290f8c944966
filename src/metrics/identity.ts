// Who this server is, as an application instance: the tags written with every metrics row and matched by
// the metrics query. Flags/env come through ServerConfig; what is left unset gets a default here.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerConfig } from '../config.js';
import { packageRoot } from '../engine/native.js';

export interface InstanceIdentity {
  region: string;
  appOrg: string;
  appname: string;
  appvers: string;
  cluster: string;
  clusterorg: string;
  cloudlet: string;
  cloudletorg: string;
  pod: string;
}

export type IdentityConfig = Pick<ServerConfig, keyof InstanceIdentity>;

/** The version in edgecv's package.json. */
export function packageVersion(): string {
  const parsed: unknown = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8'));
  const version = (parsed as { version?: unknown }).version;
  return typeof version === 'string' ? version : '0.0.0';
}

export function resolveIdentity(config: Partial<IdentityConfig>): InstanceIdentity {
  return {
    region: config.region ?? 'local',
    appOrg: config.appOrg ?? 'local',
    appname: config.appname ?? 'edgecv',
    appvers: config.appvers ?? packageVersion(),
    cluster: config.cluster ?? '',
    clusterorg: config.clusterorg ?? '',
    cloudlet: config.cloudlet ?? '',
    cloudletorg: config.cloudletorg ?? '',
    pod: config.pod ?? os.hostname(),
  };
}
