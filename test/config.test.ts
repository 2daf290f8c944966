// Server options (src/config.ts), all in one place: every row of the one table (SERVER_OPTIONS) carries its flag,
// variable, kind, help, default and engine mapping (a made-up row without one is refused); every option is set by its
// flag and by its environment variable and must reach the server config under its own key, and the engine options
// where its row maps it; a server-own option must be read somewhere in src/, so none can be dropped silently.
// Then --help's defaults, the ranges, each feature's options, precedence and errors.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TOKEN_TTL_MS } from '../src/auth/tokens.js';
import {
  ConfigError,
  DEFAULT_BODY_LIMIT,
  optionTableProblems,
  parseServerConfig,
  SERVER_OPTIONS,
  serverOptionsHelp,
  type ServerConfig,
} from '../src/config.js';
import { ENGINE_DEFAULTS, ENGINE_RANGES } from '../src/engine/limits.js';
import { DEFAULT_ANN_THRESHOLD } from '../src/engine/gallery/ann-defaults.js';
import { DEFAULT_METRICS_INTERVAL_MS, DEFAULT_METRICS_RETENTION_MS } from '../src/metrics/collector.js';
import { IDENTITY_DEFAULTS, resolveIdentity } from '../src/metrics/identity.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../src/server/drain.js';
import { HTTP_GUARD_DEFAULTS } from '../src/server/http-guards.js';
import { WEBSOCKET_LIMIT_DEFAULTS } from '../src/server/websocket-limits.js';
import { OBJECT_DETECTOR_MODELS } from '../src/engine/object-model.js';
import { engineOptionsFromConfig } from '../src/server/engine-options.js';
import { openEngine, ROOT } from './helpers.js';

type Spec = (typeof SERVER_OPTIONS)[keyof typeof SERVER_OPTIONS] & { range?: { min: number; max: number }; choices?: readonly string[] };
const CWD = '/srv/edgecv';

/** Options that only go with another one (config rules), and what they are given with. */
const COMPANION: Partial<Record<keyof ServerConfig, string[]>> = {
  tlsCert: ['--tls-key', 'key.pem'],
  tlsKey: ['--tls-cert', 'cert.pem'],
  objectLabels: ['--object-model', '/m/own.onnx'],
  objectInputSize: ['--object-model', '/m/own.onnx'],
  httpRoutes: ['--http-port', '8124'],
  metricsSinkCredentials: ['--metrics-sink', 'http://127.0.0.1:8086/edgecv'],
  metricsSinkCa: ['--metrics-sink', 'http://127.0.0.1:8086/edgecv'],
};

/** A valid value of an option that is not its default, and what the config must hold for it. */
function sample(key: string, spec: Spec): { raw: string; envRaw?: string; expected: unknown } {
  // a list of origins, checked at start (origin-check.ts)
  if (key === 'allowedOrigins') return { raw: 'https://nvr.example:8443', expected: 'https://nvr.example:8443' };
  // an InfluxDB URL, checked when parsed (metrics/influx-client.ts)
  // balancers' addresses, checked at start (client-identity.ts)
  if (key === 'trustedProxies') return { raw: '10.0.0.2,::1', expected: '10.0.0.2,::1' };
  if (key === 'metricsSink') return { raw: 'https://user:pw@influx.example:8086/edgecv', expected: 'https://user:pw@influx.example:8086/edgecv' };
  switch (spec.kind) {
    case 'port':
      return { raw: '8123', expected: 8123 };
    case 'string':
      return { raw: `value-of-${key}`, expected: `value-of-${key}` };
    case 'path':
      return { raw: `rel/${key}`, expected: path.resolve(CWD, `rel/${key}`) };
    case 'bytes':
      return { raw: '3M', expected: 3 * 1024 * 1024 };
    case 'count': {
      const n = spec.range ? Math.min(spec.range.max, spec.range.min + 1) : 7;
      return { raw: String(n), expected: n };
    }
    case 'flag':
      return { raw: '', envRaw: 'yes', expected: true };
    case 'duration':
      return { raw: '1500ms', expected: 1500 };
    case 'gallery':
      return { raw: 'redis://127.0.0.1:6390/2', expected: 'redis://127.0.0.1:6390/2' };
    case 'choice': {
      const choice = spec.choices!.at(-1)!;
      return { raw: choice, expected: choice };
    }
    case 'model':
      return { raw: OBJECT_DETECTOR_MODELS[0], expected: OBJECT_DETECTOR_MODELS[0] };
    default:
      // Every kind has a case above; a new kind makes this a type error.
      throw new Error(`no sample for the kind of --${(spec as { flag: string }).flag}`);
  }
}

describe('every server option', () => {
  const entries = Object.entries(SERVER_OPTIONS) as [keyof ServerConfig, Spec][];
  const defaults = parseServerConfig([], {}, CWD);
  const defaultEngine = engineOptionsFromConfig(defaults);

  it.each(entries.map(([key, spec]) => [key, spec] as const))('%s reaches the config by flag and by environment variable', (key, spec) => {
    const { raw, envRaw, expected } = sample(key, spec);
    const companion = COMPANION[key] ?? [];
    const byFlag = parseServerConfig([`--${spec.flag}`, ...(spec.kind === 'flag' ? [] : [raw]), ...companion], {}, CWD);
    const byEnv = parseServerConfig(companion, { [spec.env]: envRaw ?? raw }, CWD);
    for (const config of [byFlag, byEnv]) {
      expect(config[key]).toEqual(expected);
      const engineKey = spec.engine === null ? null : typeof spec.engine === 'string' ? spec.engine : spec.engine.option;
      if (engineKey) {
        const engine = engineOptionsFromConfig(config);
        expect(engine[engineKey]).toBeDefined();
        expect(engine[engineKey]).not.toEqual(defaultEngine[engineKey]);
      }
    }
    // The flag wins over the environment variable.
    if (spec.kind !== 'flag')
      expect(parseServerConfig([`--${spec.flag}`, raw, ...companion], { [spec.env]: 'not-valid-at-all' }, CWD)[key]).toEqual(expected);
  });

  it('has every field in every row, and a row without one is named', () => {
    expect(optionTableProblems(SERVER_OPTIONS)).toEqual([]);
    const madeUp = { flag: 'made-up', env: 'EDGECV_MADE_UP', kind: 'count', help: 'a made-up option', default: undefined } as const;
    expect(optionTableProblems({ ...SERVER_OPTIONS, madeUp })).toEqual(['option madeUp has no engine']);
    const { help: _help, ...noHelp } = SERVER_OPTIONS.port;
    expect(optionTableProblems({ port: noHelp })).toEqual(['option port has no help']);
    expect(optionTableProblems({ pick: { ...SERVER_OPTIONS.runtime, choices: [] } })).toEqual(['option pick is a choice with no choices']);
  });

  it('is read by the server where its row maps it to no engine option', () => {
    const sources = fs
      .readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && f !== 'config.ts')
      .map((f) => fs.readFileSync(path.join(ROOT, 'src', f), 'utf8'))
      .join('\n');
    const unread = entries.filter(([key, spec]) => spec.engine === null && !new RegExp(`\\b${key}\\b`).test(sources)).map(([key]) => key);
    expect(unread).toEqual([]);
  });
});

describe('--idle-cores reaches the engine', () => {
  const LAYOUT = { workers: 1, threadsPerWorker: 1, poseModel: null, objectDetector: null, faceEmbedder: null } as const;
  const input = new Float32Array(3 * 320 * 320).map((_, i) => (Math.sin(i) + 1) / 2);

  /** Runs yolov5s-320 alone a few times on an engine opened from this config; returns how many runs were lent. */
  async function lentRuns(config: ServerConfig): Promise<number> {
    const engine = await openEngine({ ...engineOptionsFromConfig(config), ...LAYOUT });
    try {
      for (let i = 0; i < 5; i++) await engine.runModel('yolov5s-320', input);
      return engine.stats().lentRuns;
    } finally {
      await engine.close();
    }
  }

  it("'keep' by flag or by EDGECV_IDLE_CORES lends no run; the default lends (on more than one CPU)", async () => {
    expect(await lentRuns(parseServerConfig(['--idle-cores', 'keep'], {}))).toBe(0);
    expect(await lentRuns(parseServerConfig([], { EDGECV_IDLE_CORES: 'keep' }))).toBe(0);
    const byDefault = await lentRuns(parseServerConfig([], {}));
    // With one CPU there is nothing to lend; idle-cores.test.ts checks that case.
    if ((await import('node:os')).availableParallelism() > 1) expect(byDefault).toBeGreaterThanOrEqual(3);
  });
});

describe('recognition configuration', () => {
  it('takes --admin-key, --gallery, --no-store-crops and --gallery-ann-beam, and their environment variables', () => {
    expect(parseServerConfig(['--admin-key', 'k', '--gallery', 'redis://10.0.0.5:6379/2', '--no-store-crops'], {}, '/w')).toMatchObject({
      adminKey: 'k',
      gallery: 'redis://10.0.0.5:6379/2',
      noStoreCrops: true,
    });
    expect(parseServerConfig([], { EDGECV_ADMIN_KEY: 'e', EDGECV_GALLERY: 'sqlite', EDGECV_NO_STORE_CROPS: 'true' }, '/w')).toMatchObject({
      adminKey: 'e',
      gallery: 'sqlite',
      noStoreCrops: true,
    });
    expect(parseServerConfig([], { EDGECV_NO_STORE_CROPS: '0' }, '/w').noStoreCrops).toBe(false);
    expect(parseServerConfig(['--gallery-ann-beam', '96'], {}, '/w').galleryAnnBeam).toBe(96);
    expect(parseServerConfig([], { EDGECV_GALLERY_ANN_BEAM: '256' }, '/w').galleryAnnBeam).toBe(256);
    for (const [args, env] of [
      [['--gallery', 'mysql://x'], {}],
      [[], { EDGECV_GALLERY: 'redis://' }],
      [[], { EDGECV_NO_STORE_CROPS: 'maybe' }],
      [['--admin-key', ''], {}],
      [['--gallery-ann-beam', '0'], {}],
      [['--gallery-ann-beam', '5000'], {}],
    ] as const) {
      expect(() => parseServerConfig([...args], { ...env }, '/w')).toThrow(ConfigError);
    }
  });
});
describe('--help', () => {
  /** Options whose --help names a default, and the constant the code uses when the option is not given. */
  const DEFAULTS: Partial<Record<keyof ServerConfig, number | string>> = {
    headersTimeout: HTTP_GUARD_DEFAULTS.headersTimeoutMs,
    handshakeTimeout: HTTP_GUARD_DEFAULTS.handshakeTimeoutMs,
    requestTimeout: HTTP_GUARD_DEFAULTS.requestTimeoutMs,
    minBodyRate: HTTP_GUARD_DEFAULTS.minBodyBytesPerSec,
    bodyLimit: DEFAULT_BODY_LIMIT,
    drainTimeout: DEFAULT_DRAIN_TIMEOUT_MS,
    wsMaxSockets: WEBSOCKET_LIMIT_DEFAULTS.maxSockets,
    wsMaxSocketsPerAddress: WEBSOCKET_LIMIT_DEFAULTS.maxSocketsPerAddress,
    wsIdleTimeout: WEBSOCKET_LIMIT_DEFAULTS.idleTimeoutMs,
    metricsInterval: DEFAULT_METRICS_INTERVAL_MS,
    metricsRetention: DEFAULT_METRICS_RETENTION_MS,
    tokenTtl: DEFAULT_TOKEN_TTL_MS,
    galleryAnnThreshold: DEFAULT_ANN_THRESHOLD,
    region: IDENTITY_DEFAULTS.region,
    appOrg: IDENTITY_DEFAULTS.appOrg,
    appname: IDENTITY_DEFAULTS.appname,
  };

  it.each(Object.entries(DEFAULTS))('names the default of %s that the code uses', (key, constant) => {
    const spec = SERVER_OPTIONS[key as keyof ServerConfig];
    const named = /\(default ([^):,]+)/.exec(spec.help)?.[1];
    expect(named, `--${spec.flag} names no default`).toBeDefined();
    // The default as --help writes it must read back, through the option's own parser, as the constant.
    expect(parseServerConfig([`--${spec.flag}`, named!], {}, CWD)[key as keyof ServerConfig]).toEqual(constant);
  });
});

describe('the server config and CLI take their ranges from there', () => {
  const flags = [
    ['workers', 'workers'],
    ['threads-per-worker', 'threadsPerWorker'],
    ['queue-limit', 'queueLimit'],
    ['max-aspect-ratio', 'maxAspectRatio'],
    ['min-image-side', 'minImageSide'],
  ] as const;

  it.each(flags)('--%s: accepts its maximum, refuses one more, and --help shows range and default', (flag, key) => {
    const { max } = ENGINE_RANGES[key];
    expect(parseServerConfig([`--${flag}`, String(max)], {})[key]).toBe(max);
    expect(() => parseServerConfig([`--${flag}`, String(max + 1)], {})).toThrow(ConfigError);
    expect(() => parseServerConfig([`--${flag}`, String(max + 1)], {})).toThrow(`expected an integer from 1 to ${max}`);
    expect(serverOptionsHelp()).toMatch(new RegExp(`--${flag} <v> +.*\\(1-${max}, default ${ENGINE_DEFAULTS[key]}\\)`));
  });

  it('--object-input-size and the environment variables use the same ranges', () => {
    expect(() => parseServerConfig(['--object-model', '/m/own.onnx', '--object-input-size', '4128'], {})).toThrow(/from 32 to 4096/);
    expect(() => parseServerConfig([], { EDGECV_WORKERS: '65' })).toThrow(/EDGECV_WORKERS.*from 1 to 64/);
    expect(parseServerConfig([], { EDGECV_WORKERS: '64' }).workers).toBe(64);
  });
});

describe('the options of each feature', () => {
  it('--http-port and --api-key, or their environment variables', () => {
    const none = parseServerConfig([], {});
    expect(none.httpPort).toBeUndefined();
    expect(none.apiKey).toBeUndefined();
    expect(parseServerConfig(['--http-port', '5000', '--api-key', 'k'], {})).toMatchObject({ httpPort: 5000, apiKey: 'k' });
    expect(parseServerConfig([], { EDGECV_HTTP_PORT: '80', EDGECV_API_KEY: 'e' })).toMatchObject({ httpPort: 80, apiKey: 'e' });
    expect(() => parseServerConfig(['--http-port', '70000'], {})).toThrow(/port/);
  });

  it('the hostile-input and slow-client options, from flags and EDGECV_* variables', () => {
    const c = parseServerConfig(['--max-aspect-ratio', '16', '--headers-timeout', '5s', '--min-body-rate', '2K', '--metrics-access', 'loopback'], {
      EDGECV_MIN_IMAGE_SIDE: '12',
      EDGECV_HANDSHAKE_TIMEOUT: '3s',
      EDGECV_REQUEST_TIMEOUT: '1m',
    });
    expect(c).toMatchObject({
      maxAspectRatio: 16,
      minImageSide: 12,
      headersTimeout: 5000,
      handshakeTimeout: 3000,
      requestTimeout: 60_000,
      minBodyRate: 2048,
      metricsAccess: 'loopback',
    });
    expect(() => parseServerConfig(['--metrics-access', 'public'], {})).toThrow(ConfigError);
    expect(() => parseServerConfig([], { EDGECV_HEADERS_TIMEOUT: 'soon' })).toThrow(ConfigError);
  });

  it('the instance identity, metrics interval and retention and token TTL: documented defaults, flags and environment', () => {
    const d = resolveIdentity(parseServerConfig([], {}, '/w'));
    expect(d).toEqual({
      region: 'local',
      appOrg: 'local',
      appname: 'edgecv',
      appvers: '0.1.0',
      cluster: '',
      clusterorg: '',
      cloudlet: '',
      cloudletorg: '',
      pod: os.hostname(),
    });
    const c = parseServerConfig(
      [
        '--region',
        'eu',
        '--app-org',
        'acme',
        '--appname',
        'facesvc',
        '--cluster',
        'c1',
        '--clusterorg',
        'co',
        '--cloudlet',
        'cl',
        '--cloudletorg',
        'clo',
        '--pod',
        'p1',
        '--metrics-interval',
        '500ms',
        '--metrics-retention',
        '2h',
        '--token-ttl',
        '30m',
      ],
      { EDGECV_APPVERS: '3.1.4', EDGECV_REGION: 'us' },
      '/w',
    );
    expect(resolveIdentity(c)).toEqual({
      region: 'eu',
      appOrg: 'acme',
      appname: 'facesvc',
      appvers: '3.1.4',
      cluster: 'c1',
      clusterorg: 'co',
      cloudlet: 'cl',
      cloudletorg: 'clo',
      pod: 'p1',
    });
    expect([c.metricsInterval, c.metricsRetention, c.tokenTtl]).toEqual([500, 2 * 3600_000, 30 * 60_000]);
    expect(parseServerConfig([], { EDGECV_METRICS_INTERVAL: '10' }, '/w').metricsInterval).toBe(10_000);
    expect(() => parseServerConfig(['--metrics-interval', 'soon'], {}, '/w')).toThrow(/--metrics-interval/);
    expect(() => parseServerConfig(['--token-ttl', '0s'], {}, '/w')).toThrow(/--token-ttl/);
  });

  it('--pose-requires-gpu is off by default, on with the flag or the environment, and a bad value is an error', () => {
    expect(parseServerConfig([], {}, '/w').poseRequiresGpu).toBeUndefined();
    expect(parseServerConfig(['--pose-requires-gpu'], {}, '/w').poseRequiresGpu).toBe(true);
    expect(parseServerConfig([], { EDGECV_POSE_REQUIRES_GPU: '1' }, '/w').poseRequiresGpu).toBe(true);
    expect(parseServerConfig([], { EDGECV_POSE_REQUIRES_GPU: 'false' }, '/w').poseRequiresGpu).toBe(false);
    expect(parseServerConfig(['--pose-requires-gpu'], { EDGECV_POSE_REQUIRES_GPU: '0' }, '/w').poseRequiresGpu).toBe(true);
    expect(() => parseServerConfig([], { EDGECV_POSE_REQUIRES_GPU: 'maybe' }, '/w')).toThrow(ConfigError);
    expect(() => parseServerConfig(['--pose-requires-gpu=yes'], {}, '/w')).toThrow(ConfigError);
  });

  it('--object-model / EDGECV_OBJECT_MODEL: a name or a path (resolved), labels only with a path', () => {
    expect(parseServerConfig(['--object-model', 'yolov5s-416'], {}, '/w').objectModel).toBe('yolov5s-416');
    const c = parseServerConfig(['--object-labels', 'l.txt'], { EDGECV_OBJECT_MODEL: 'm/own.onnx', EDGECV_OBJECT_INPUT_SIZE: '416' }, '/w');
    expect(c).toMatchObject({ objectModel: '/w/m/own.onnx', objectLabels: '/w/l.txt', objectInputSize: 416 });
    expect(() => parseServerConfig(['--object-model', 'yolov9'], {}, '/w')).toThrow(/--object-model.*expected one of centernet-320.*or a path/);
    expect(() => parseServerConfig(['--object-labels', 'l.txt'], {}, '/w')).toThrow(/go with an own --object-model/);
  });
});

describe('defaults, precedence, errors and the CLI', () => {
  it('has the documented defaults', () => {
    const c = parseServerConfig([], {}, '/srv/x');
    expect(c).toEqual({ port: 8008, host: '0.0.0.0', dataDir: '/srv/x/data', bodyLimit: 20 * 1024 * 1024 });
  });

  it('takes every flag, flags win over environment, environment over defaults', () => {
    const env = { EDGECV_PORT: '9000', EDGECV_HOST: '127.0.0.1', EDGECV_WORKERS: '3', EDGECV_BODY_LIMIT: '1K' };
    expect(parseServerConfig([], env, '/w').port).toBe(9000);
    const c = parseServerConfig(
      [
        '--port',
        '9443',
        '--data-dir',
        'state',
        '--tls-cert',
        'c.pem',
        '--tls-key',
        '/k.pem',
        '--body-limit',
        '5M',
        '--max-pixels',
        '1000000',
        '--threads-per-worker',
        '2',
        '--queue-limit',
        '8',
        '--model-dir',
        'm',
        '--runtime',
        'opencv',
        '--backend',
        'cpu',
      ],
      env,
      '/w',
    );
    expect(c).toEqual({
      port: 9443,
      host: '127.0.0.1',
      dataDir: '/w/state',
      tlsCert: '/w/c.pem',
      tlsKey: '/k.pem',
      bodyLimit: 5 * 1024 * 1024,
      modelDir: '/w/m',
      runtime: 'opencv',
      backend: 'cpu',
      maxPixels: 1_000_000,
      workers: 3,
      threadsPerWorker: 2,
      queueLimit: 8,
    });
  });

  it('rejects bad values with a clear error', () => {
    const bad: [string[], Record<string, string>, RegExp][] = [
      [['--port', 'abc'], {}, /--port.*"abc"/],
      [['--port', '70000'], {}, /--port/],
      [[], { EDGECV_PORT: '-1' }, /EDGECV_PORT/],
      [['--workers', '0'], {}, /--workers/],
      [['--body-limit', 'lots'], {}, /--body-limit/],
      [['--nope'], {}, /nope/],
      [['--tls-cert', 'a.pem'], {}, /--tls-key/],
      [['--host', ''], {}, /--host/],
      [['--runtime', 'tensorrt'], {}, /--runtime.*"tensorrt".*auto, onnxruntime, opencv/],
      [[], { EDGECV_BACKEND: 'vulkan' }, /EDGECV_BACKEND.*auto, cpu, cuda, gpu/],
    ];
    for (const [args, env, re] of bad) {
      expect(() => parseServerConfig(args, env, '/w')).toThrow(ConfigError);
      expect(() => parseServerConfig(args, env, '/w')).toThrow(re);
    }
  });

  it('the CLI exits 2 on a bad value', async () => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), 'serve', '--port', 'nope'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err).toMatch(/invalid --port: "nope"/);
  });
});
