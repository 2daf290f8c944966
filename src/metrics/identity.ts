// Who this server is, as an application instance: the tags written with every metrics row and matched by
// the metrics query. The server passes its options; what is left unset gets a default here.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

/** The identity as configured: each tag unset gets its default (resolveIdentity). */
export type IdentityConfig = Partial<InstanceIdentity>;

/** The version in edgecv's package.json. */
export function packageVersion(): string {
  const parsed: unknown = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8'));
  const version = (parsed as { version?: unknown }).version;
  return typeof version === 'string' ? version : '0.0.0';
}

/** The identity of an instance given none (appvers: the package version; pod: the host name). */
export const IDENTITY_DEFAULTS = { region: 'local', appOrg: 'local', appname: 'edgecv' } as const;

export function resolveIdentity(config: Partial<IdentityConfig>): InstanceIdentity {
  return {
    region: config.region ?? IDENTITY_DEFAULTS.region,
    appOrg: config.appOrg ?? IDENTITY_DEFAULTS.appOrg,
    appname: config.appname ?? IDENTITY_DEFAULTS.appname,
    appvers: config.appvers ?? packageVersion(),
    cluster: config.cluster ?? '',
    clusterorg: config.clusterorg ?? '',
    cloudlet: config.cloudlet ?? '',
    cloudletorg: config.cloudletorg ?? '',
    pod: config.pod ?? os.hostname(),
  };
}
