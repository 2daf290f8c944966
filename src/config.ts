// Server configuration: command-line flags win over EDGECV_* environment variables, which win over defaults.

import path from 'node:path';
import { parseArgs } from 'node:util';
import { CUSTOM_OBJECT_INPUT_SIZE, DEFAULT_BODY_LIMIT, ENGINE_DEFAULTS, ENGINE_RANGES, type IntRange } from './engine/limits.js';
import { isModelPath, OBJECT_DETECTOR_MODELS } from './engine/object-model.js';
import { parseInfluxUrl } from './metrics/influx-client.js';
import { DEFAULT_TOKEN_TTL_MS } from './auth/tokens.js';
import { DEFAULT_ANN_THRESHOLD, DEFAULT_EXPANSION_SEARCH, LARGE_GALLERY, LARGE_GALLERY_EXPANSION } from './engine/gallery/ann-defaults.js';
import { DEFAULT_METRICS_INTERVAL_MS, DEFAULT_METRICS_RETENTION_MS } from './metrics/collector.js';
import { IDENTITY_DEFAULTS } from './metrics/identity.js';
import { unstorableTagValue } from './metrics/influx-line.js';
import { DEFAULT_DRAIN_DELAY_MS, DEFAULT_DRAIN_TIMEOUT_MS } from './server/drain.js';
import { HTTP_GUARD_DEFAULTS } from './server/http-guards.js';
import { parseTrustedProxies } from './server/client-identity.js';
import { parseAllowedHosts } from './server/host-check.js';
import { parseAllowedOrigins } from './server/origin-check.js';
import { WEBSOCKET_LIMIT_DEFAULTS } from './server/websocket-limits.js';
import { BACKENDS, IDLE_CORES, NET_KEYS, POSE_MODES, PRECISION_CHOICES, RUNTIMES, type EngineOptions } from './engine/types.js';

export const METRICS_ACCESS = ['open', 'loopback', 'admin'] as const;
export type MetricsAccess = (typeof METRICS_ACCESS)[number];

export const DEFAULT_PORT = 8008;
export const DEFAULT_HOST = '0.0.0.0';
// Defined with every other limit (engine/limits.ts); exported here too, where the server's settings are.
export { DEFAULT_BODY_LIMIT };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Kind = 'port' | 'string' | 'path' | 'bytes' | 'count' | 'flag' | 'duration' | 'gallery' | 'choice' | 'model';

/** The Engine.open() option a server option sets, and how its value becomes the engine's. */
interface EngineMapping {
  option: keyof EngineOptions;
  value?: (v: string) => unknown;
}

/**
 * One row of the option table: everything about an option is written here and nowhere else. Every field is
 * required (`optionTableProblems` checks it at run time too): `default` undefined means the server sets nothing
 * and the part that reads the option keeps its own default (which the help names); `engine` null means the option
 * is the server's own, not passed to Engine.open().
 */
export interface OptionSpec {
  flag: string;
  env: string;
  kind: Kind;
  help: string;
  default: string | number | boolean | undefined;
  engine: keyof EngineOptions | EngineMapping | null;
  /** The accepted values of a 'choice'. */
  choices?: readonly string[];
  /** The accepted range of a 'count' that the engine bounds (engine/limits.ts). */
  range?: IntRange;
}

/** A duration for --help as the options take it: whole hours as 48h, whole seconds as 120s, else 500ms. */
export function durationText(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** A byte count for --help, as --body-limit takes it: 8K, 20M. */
export function bytesText(n: number): string {
  for (const [unit, size] of [
    ['G', 1024 ** 3],
    ['M', 1024 ** 2],
    ['K', 1024],
  ] as const) {
    if (n % size === 0) return `${n / size}${unit}`;
  }
  return String(n);
}

/** --net-devices faceEmbedder=cpu,objectDetector=gpu as the engine's netDevices (which checks names and devices). */
function netDevicesValue(v: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const [net = '', device = ''] = item.split('=').map((x) => x.trim());
    out[net] = device;
  }
  return out;
}

/** "from A to B, default C" of an engine option, for --help. */
function rangeHelp(range: IntRange, fallback: number): string {
  return `${range.min}-${range.max}, default ${fallback}`;
}

/** Every server option: flag, environment variable, how it is parsed. The order is the --help order. */
// Kept as a table, one option a row, as the README's options table (test/readme-options.test.ts) is.
// prettier-ignore
export const SERVER_OPTIONS = {
  port: { flag: 'port', env: 'EDGECV_PORT', default: DEFAULT_PORT, engine: null, kind: 'port', help: `TCP port (default ${DEFAULT_PORT})` },
  host: { flag: 'host', env: 'EDGECV_HOST', default: DEFAULT_HOST, engine: null, kind: 'string', help: `address to listen on (default ${DEFAULT_HOST})` },
  dataDir: { flag: 'data-dir', env: 'EDGECV_DATA_DIR', default: 'data', engine: null, kind: 'path', help: 'state folder, tls/ lives here (default ./data)' },
  tlsCert: { flag: 'tls-cert', env: 'EDGECV_TLS_CERT', default: undefined, engine: null, kind: 'path', help: 'PEM certificate (default: self-signed in data-dir/tls)' },
  tlsKey: { flag: 'tls-key', env: 'EDGECV_TLS_KEY', default: undefined, engine: null, kind: 'path', help: 'PEM private key for --tls-cert' },
  bodyLimit: { flag: 'body-limit', env: 'EDGECV_BODY_LIMIT', default: DEFAULT_BODY_LIMIT, engine: null, kind: 'bytes', help: `largest request body, bytes; K/M/G suffixes allowed (default ${bytesText(DEFAULT_BODY_LIMIT)})` },
  modelDir: { flag: 'model-dir', env: 'EDGECV_MODEL_DIR', default: undefined, engine: 'modelDir', kind: 'path', help: 'folder of converted models (default: engine default)' },
  runtime: { flag: 'runtime', env: 'EDGECV_RUNTIME', default: undefined, engine: 'runtime', kind: 'choice', choices: RUNTIMES, help: `model runtime: ${RUNTIMES.join(', ')} (default auto: onnxruntime when it loads)` },
  precision: { flag: 'precision', env: 'EDGECV_PRECISION', default: undefined, engine: 'precision', kind: 'choice', choices: PRECISION_CHOICES, help: `model precision: ${PRECISION_CHOICES.join(', ')} (default int8: each model with an int8 file runs it; auto: the faster file of each model on this CPU, timed at start; docs/int8.md)` },
  backend: { flag: 'backend', env: 'EDGECV_BACKEND', default: undefined, engine: 'backend', kind: 'choice', choices: BACKENDS, help: `device: ${BACKENDS.join(', ')} (default auto: CUDA when usable, else each net that agrees with the CPU and is faster on a hardware Vulkan GPU; gpu: every net that agrees, on any Vulkan adapter; docs/gpu.md)` },
  netDevices: { flag: 'net-devices', env: 'EDGECV_NET_DEVICES', default: undefined, engine: { option: 'netDevices', value: netDevicesValue }, kind: 'string', help: `with --backend gpu or auto, nets forced to a device: NET=cpu|gpu[,...], NET one of ${NET_KEYS.join(', ')} (default: the GPU check decides)` },
  maxPixels: { flag: 'max-pixels', env: 'EDGECV_MAX_PIXELS', default: undefined, engine: 'maxPixels', kind: 'count', range: ENGINE_RANGES.maxPixels, help: `largest image, width*height (default ${ENGINE_DEFAULTS.maxPixels})` },
  maxAspectRatio: { flag: 'max-aspect-ratio', env: 'EDGECV_MAX_ASPECT_RATIO', default: undefined, engine: 'maxAspectRatio', kind: 'count', range: ENGINE_RANGES.maxAspectRatio, help: `refuse images whose longer side is over N times the shorter (${rangeHelp(ENGINE_RANGES.maxAspectRatio, ENGINE_DEFAULTS.maxAspectRatio)})` },
  minImageSide: { flag: 'min-image-side', env: 'EDGECV_MIN_IMAGE_SIDE', default: undefined, engine: 'minImageSide', kind: 'count', range: ENGINE_RANGES.minImageSide, help: `refuse images with a side shorter than this, pixels (${rangeHelp(ENGINE_RANGES.minImageSide, ENGINE_DEFAULTS.minImageSide)})` },
  headersTimeout: { flag: 'headers-timeout', env: 'EDGECV_HEADERS_TIMEOUT', default: undefined, engine: null, kind: 'duration', help: `time a client has to send the request headers (default ${durationText(HTTP_GUARD_DEFAULTS.headersTimeoutMs)})` },
  handshakeTimeout: { flag: 'handshake-timeout', env: 'EDGECV_HANDSHAKE_TIMEOUT', default: undefined, engine: null, kind: 'duration', help: `time a connection has to finish the TLS handshake (default ${durationText(HTTP_GUARD_DEFAULTS.handshakeTimeoutMs)})` },
  requestTimeout: { flag: 'request-timeout', env: 'EDGECV_REQUEST_TIMEOUT', default: undefined, engine: null, kind: 'duration', help: `time a client has to send a whole request, body included (default ${durationText(HTTP_GUARD_DEFAULTS.requestTimeoutMs)})` },
  minBodyRate: { flag: 'min-body-rate', env: 'EDGECV_MIN_BODY_RATE', default: undefined, engine: null, kind: 'bytes', help: `slowest request body after a 5 s grace, bytes/s (default ${bytesText(HTTP_GUARD_DEFAULTS.minBodyBytesPerSec)})` },
  drainTimeout: { flag: 'drain-timeout', env: 'EDGECV_DRAIN_TIMEOUT', default: undefined, engine: null, kind: 'duration', help: `on SIGTERM/SIGINT, time the requests in flight get to finish (default ${durationText(DEFAULT_DRAIN_TIMEOUT_MS)}: fits a Kubernetes grace period of 30s)` },
  drainDelay: { flag: 'drain-delay', env: 'EDGECV_DRAIN_DELAY', default: undefined, engine: null, kind: 'duration', help: `on SIGTERM/SIGINT, time readiness fails before the listener closes, for a balancer to notice (default ${durationText(DEFAULT_DRAIN_DELAY_MS)})` },
  wsMaxSockets: { flag: 'ws-max-sockets', env: 'EDGECV_WS_MAX_SOCKETS', default: undefined, engine: null, kind: 'count', help: `most WebSocket sockets open at once, all clients; never more than the descriptor limit less a reserve for HTTPS (default ${WEBSOCKET_LIMIT_DEFAULTS.maxSockets})` },
  wsMaxSocketsPerAddress: { flag: 'ws-max-sockets-per-address', env: 'EDGECV_WS_MAX_SOCKETS_PER_ADDRESS', default: undefined, engine: null, kind: 'count', help: `most WebSocket sockets open at once from one address, an IPv6 /64 counting as one (default ${WEBSOCKET_LIMIT_DEFAULTS.maxSocketsPerAddress})` },
  wsIdleTimeout: { flag: 'ws-idle-timeout', env: 'EDGECV_WS_IDLE_TIMEOUT', default: undefined, engine: null, kind: 'duration', help: `a WebSocket with no complete frame for this long is closed; pings every half of it (default ${durationText(WEBSOCKET_LIMIT_DEFAULTS.idleTimeoutMs)})` },
  metricsAccess: { flag: 'metrics-access', env: 'EDGECV_METRICS_ACCESS', default: undefined, engine: null, kind: 'choice', choices: METRICS_ACCESS, help: "who may GET /metrics: open (default), loopback, or admin (the admin key)" },
  workers: { flag: 'workers', env: 'EDGECV_WORKERS', default: undefined, engine: 'workers', kind: 'count', range: ENGINE_RANGES.workers, help: `inference workers (${rangeHelp(ENGINE_RANGES.workers, ENGINE_DEFAULTS.workers)})` },
  threadsPerWorker: { flag: 'threads-per-worker', env: 'EDGECV_THREADS_PER_WORKER', default: undefined, engine: 'threadsPerWorker', kind: 'count', range: ENGINE_RANGES.threadsPerWorker, help: `threads per worker (${rangeHelp(ENGINE_RANGES.threadsPerWorker, ENGINE_DEFAULTS.threadsPerWorker)})` },
  idleCores: { flag: 'idle-cores', env: 'EDGECV_IDLE_CORES', default: undefined, engine: 'idleCores', kind: 'choice', choices: IDLE_CORES, help: "'lend' (default): a request alone in the server runs its models on every core (more memory); 'keep': each on its worker's threads" },
  noWarmUp: { flag: 'no-warm-up', env: 'EDGECV_NO_WARM_UP', default: undefined, engine: { option: 'warmUp', value: (v) => v !== 'true' }, kind: 'flag', help: 'start without warming the models at the input shapes they take: ready sooner, each first request at a new shape slower (emulated CPUs, software GPUs, tests; env: 1/0, true/false)' },
  queueLimit: { flag: 'queue-limit', env: 'EDGECV_QUEUE_LIMIT', default: undefined, engine: 'queueLimit', kind: 'count', range: ENGINE_RANGES.queueLimit, help: `queued images before 503 (${rangeHelp(ENGINE_RANGES.queueLimit, ENGINE_DEFAULTS.queueLimit)})` },
  objectModel: { flag: 'object-model', env: 'EDGECV_OBJECT_MODEL', default: undefined, engine: 'objectDetector', kind: 'model', help: `object model: ${OBJECT_DETECTOR_MODELS.join(', ')}, or an own YOLO export /path/model.onnx (default ${ENGINE_DEFAULTS.objectDetector})` },
  objectLabels: { flag: 'object-labels', env: 'EDGECV_OBJECT_LABELS', default: undefined, engine: 'objectLabels', kind: 'path', help: 'class names of an own --object-model, one per line (default: the 80 COCO classes)' },
  objectInputSize: { flag: 'object-input-size', env: 'EDGECV_OBJECT_INPUT_SIZE', default: undefined, engine: 'objectInputSize', kind: 'count', range: ENGINE_RANGES.objectInputSize, help: `input side of an own --object-model, a multiple of 32 (${rangeHelp(ENGINE_RANGES.objectInputSize, CUSTOM_OBJECT_INPUT_SIZE)})` },
  poseMode: { flag: 'pose-mode', env: 'EDGECV_POSE_MODE', default: undefined, engine: null, kind: 'choice', choices: POSE_MODES, help: "pose: 'persons' (a person detector, then a pose per person; default) or 'whole' (one pass, faster)" },
  posePersonModel: { flag: 'pose-person-model', env: 'EDGECV_POSE_PERSON_MODEL', default: undefined, engine: { option: 'personDetector', value: (v) => (v === 'objects' ? null : v) }, kind: 'choice', choices: [...OBJECT_DETECTOR_MODELS, 'objects'] as const, help: `model that finds people for pose: ${OBJECT_DETECTOR_MODELS.join(', ')}, or 'objects' (the object model; default ${ENGINE_DEFAULTS.personDetector} beside a yolov5s of another size, else objects)` },
  poseRequiresGpu: { flag: 'pose-requires-gpu', env: 'EDGECV_POSE_REQUIRES_GPU', default: undefined, engine: null, kind: 'flag', help: 'answer pose requests 501 unless running on CUDA (env: 1/0, true/false)' },
  region: { flag: 'region', env: 'EDGECV_REGION', default: undefined, engine: null, kind: 'string', help: `region of this instance (default ${IDENTITY_DEFAULTS.region})` },
  appOrg: { flag: 'app-org', env: 'EDGECV_APP_ORG', default: undefined, engine: null, kind: 'string', help: `organization owning the app (default ${IDENTITY_DEFAULTS.appOrg})` },
  appname: { flag: 'appname', env: 'EDGECV_APPNAME', default: undefined, engine: null, kind: 'string', help: `app name (default ${IDENTITY_DEFAULTS.appname})` },
  appvers: { flag: 'appvers', env: 'EDGECV_APPVERS', default: undefined, engine: null, kind: 'string', help: 'app version (default: the package version)' },
  cluster: { flag: 'cluster', env: 'EDGECV_CLUSTER', default: undefined, engine: null, kind: 'string', help: 'cluster name (default empty)' },
  clusterorg: { flag: 'clusterorg', env: 'EDGECV_CLUSTERORG', default: undefined, engine: null, kind: 'string', help: 'cluster organization (default empty)' },
  cloudlet: { flag: 'cloudlet', env: 'EDGECV_CLOUDLET', default: undefined, engine: null, kind: 'string', help: 'cloudlet name (default empty)' },
  cloudletorg: { flag: 'cloudletorg', env: 'EDGECV_CLOUDLETORG', default: undefined, engine: null, kind: 'string', help: 'cloudlet organization (default empty)' },
  pod: { flag: 'pod', env: 'EDGECV_POD', default: undefined, engine: null, kind: 'string', help: 'pod name (default: the host name)' },
  metricsInterval: { flag: 'metrics-interval', env: 'EDGECV_METRICS_INTERVAL', default: undefined, engine: null, kind: 'duration', help: `time between metrics samples, e.g. 10s, 500ms (default ${durationText(DEFAULT_METRICS_INTERVAL_MS)})` },
  metricsRetention: { flag: 'metrics-retention', env: 'EDGECV_METRICS_RETENTION', default: undefined, engine: null, kind: 'duration', help: `how long metrics samples are kept, e.g. 48h (default ${durationText(DEFAULT_METRICS_RETENTION_MS)})` },
  metricsSink: { flag: 'metrics-sink', env: 'EDGECV_METRICS_SINK', default: undefined, engine: null, kind: 'string', help: 'also send every metrics sample to InfluxDB: http(s)://[user:pass@]host:8086/database (default: none; docs/fleet-metrics.md)' },
  metricsSinkCredentials: { flag: 'metrics-sink-credentials', env: 'EDGECV_METRICS_SINK_CREDENTIALS', default: undefined, engine: null, kind: 'path', help: "file whose first line is USER:PASSWORD or 'token TOKEN' for --metrics-sink" },
  metricsSinkCa: { flag: 'metrics-sink-ca', env: 'EDGECV_METRICS_SINK_CA', default: undefined, engine: null, kind: 'path', help: 'PEM CA certificate that signed an https:// --metrics-sink' },
  tokenTtl: { flag: 'token-ttl', env: 'EDGECV_TOKEN_TTL', default: undefined, engine: null, kind: 'duration', help: `lifetime of a login token, e.g. 24h (default ${durationText(DEFAULT_TOKEN_TTL_MS)})` },
  adminKey: { flag: 'admin-key', env: 'EDGECV_ADMIN_KEY', default: undefined, engine: null, kind: 'string', help: 'key for gallery changes (default: none, loopback clients only)' },
  apiKey: { flag: 'api-key', env: 'EDGECV_API_KEY', default: undefined, engine: null, kind: 'string', help: 'key the DeepStack /v1/vision/* routes require (default: none)' },
  deepstackEnrolmentKey: { flag: 'deepstack-enrolment-key', env: 'EDGECV_DEEPSTACK_ENROLMENT_KEY', default: undefined, engine: null, kind: 'choice', choices: ['api', 'admin'] as const, help: "key for /v1/vision/face/register and /face/delete: 'api' (the API key, as DeepStack; default) or 'admin' (the admin key)" },
  allowedOrigins: { flag: 'allowed-origins', env: 'EDGECV_ALLOWED_ORIGINS', default: undefined, engine: null, kind: 'string', help: "comma-separated origins (https://host:port) whose web pages may POST here; the server's own always may (default: none)" },
  allowedHosts: { flag: 'allowed-hosts', env: 'EDGECV_ALLOWED_HOSTS', default: undefined, engine: null, kind: 'string', help: 'comma-separated host names clients reach this server by, besides localhost, its addresses and host name: any other Host is refused with 421 (DNS rebinding); * for any (default: none)' },
  trustedProxies: { flag: 'trusted-proxies', env: 'EDGECV_TRUSTED_PROXIES', default: undefined, engine: null, kind: 'string', help: 'comma-separated addresses of balancers whose X-Forwarded-For names the client, for the workers\' fair shares between clients (default: none)' },
  httpPort: { flag: 'http-port', env: 'EDGECV_HTTP_PORT', default: undefined, engine: null, kind: 'port', help: 'plain-HTTP port for the DeepStack /v1/vision/* routes only (default: off)' },
  httpRoutes: { flag: 'http-routes', env: 'EDGECV_HTTP_ROUTES', default: undefined, engine: null, kind: 'choice', choices: ['deepstack', 'all'] as const, help: "what --http-port serves: 'deepstack' (/v1/vision/*, default) or 'all' (every route and /ws/*, for the original clients' http:// and ws://; no TLS: keep it on loopback or behind a TLS balancer)" },
  gallery: { flag: 'gallery', env: 'EDGECV_GALLERY', default: undefined, engine: null, kind: 'gallery', help: "gallery store: 'sqlite' (data-dir/gallery.db) or redis://host:6379/0" },
  galleryAnnThreshold: { flag: 'gallery-ann-threshold', env: 'EDGECV_GALLERY_ANN_THRESHOLD', default: undefined, engine: null, kind: 'count', help: `enrolled samples from which recognition searches an HNSW index instead of every embedding (default ${DEFAULT_ANN_THRESHOLD})` },
  galleryAnnQuantization: { flag: 'gallery-ann-quantization', env: 'EDGECV_GALLERY_ANN_QUANTIZATION', default: undefined, engine: null, kind: 'choice', choices: ['f16', 'i8'] as const, help: 'storage of that index: f16 (default) or i8' },
  galleryAnnBeam: { flag: 'gallery-ann-beam', env: 'EDGECV_GALLERY_ANN_BEAM', default: undefined, engine: null, kind: 'count', range: { min: 1, max: 4096 }, help: `beam width of an HNSW search, 1-4096 (default ${DEFAULT_EXPANSION_SEARCH}, ${LARGE_GALLERY_EXPANSION} from ${LARGE_GALLERY} samples)` },
  noStoreCrops: { flag: 'no-store-crops', env: 'EDGECV_NO_STORE_CROPS', default: undefined, engine: null, kind: 'flag', help: 'keep no face crops with samples (no re-embedding on a model change)' },
} satisfies Record<string, OptionSpec>;

type ServerOptions = typeof SERVER_OPTIONS;
/** The value an option takes once parsed, from its row's kind (and choices). */
type OptionValue<S extends OptionSpec> = S extends { kind: 'choice'; choices: readonly (infer C)[] }
  ? C
  : S['kind'] extends 'port' | 'bytes' | 'count' | 'duration'
    ? number
    : S['kind'] extends 'flag'
      ? boolean
      : string;
type WithDefault = { [K in keyof ServerOptions]: ServerOptions[K]['default'] extends undefined ? never : K }[keyof ServerOptions];

/** The parsed options, derived from the table: an option with a default is always there, any other may be absent. */
export type ServerConfig = { [K in WithDefault]: OptionValue<ServerOptions[K]> } & {
  [K in Exclude<keyof ServerOptions, WithDefault>]?: OptionValue<ServerOptions[K]>;
};

/** What is missing from rows of an option table (each row needs every field of OptionSpec); empty when nothing is. */
export function optionTableProblems(table: Readonly<Record<string, Partial<OptionSpec>>>): string[] {
  const required = ['flag', 'env', 'kind', 'help', 'default', 'engine'] as const;
  const problems: string[] = [];
  for (const [key, spec] of Object.entries(table)) {
    for (const field of required) if (!(field in spec)) problems.push(`option ${key} has no ${field}`);
    if (spec.kind === 'choice' && !spec.choices?.length) problems.push(`option ${key} is a choice with no choices`);
  }
  return problems;
}

function parseValue(spec: OptionSpec, raw: string, origin: string): string | number | boolean {
  const bad = (what: string): never => {
    throw new ConfigError(`invalid ${origin}: ${JSON.stringify(raw)} (${what})`);
  };
  const v = raw.trim();
  switch (spec.kind) {
    case 'port': {
      if (!/^\d+$/.test(v)) bad('expected a port number 0-65535');
      const n = Number(v);
      if (n > 65535) bad('expected a port number 0-65535');
      return n;
    }
    case 'count': {
      if (!/^\d+$/.test(v)) bad('expected a positive integer');
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < 1) bad('expected a positive integer');
      if (spec.range && (n < spec.range.min || n > spec.range.max)) bad(`expected an integer from ${spec.range.min} to ${spec.range.max}`);
      return n;
    }
    case 'bytes': {
      const m = /^(\d+)\s*([kmg]?)(i?b)?$/i.exec(v);
      if (!m) bad('expected bytes, e.g. 20971520 or 20M');
      const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m![2]!.toLowerCase()]!;
      const n = Number(m![1]) * mult;
      if (!Number.isSafeInteger(n) || n < 1) bad('expected a positive size');
      return n;
    }
    case 'flag': {
      const v2 = v.toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v2)) return true;
      if (['0', 'false', 'no', 'off'].includes(v2)) return false;
      return bad('expected 1/0, true/false, yes/no or on/off');
    }
    case 'duration': {
      const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i.exec(v);
      if (!m) bad('expected a duration, e.g. 500ms, 10s, 5m, 48h, 7d (a bare number is seconds)');
      const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m![2] ?? 's').toLowerCase() as 'ms']!;
      const ms = Math.round(Number(m![1]) * unitMs);
      if (!Number.isSafeInteger(ms) || ms < 1) bad('expected a duration of at least 1 ms');
      return ms;
    }
    case 'gallery':
      if (v !== 'sqlite' && !/^rediss?:\/\/[^\s/]+(\/\d{1,2})?$/.test(v)) bad("expected 'sqlite' or redis://host:port/db");
      return v;
    case 'choice':
      if (!spec.choices?.includes(v)) bad(`expected one of ${spec.choices?.join(', ')}`);
      return v;
    case 'model':
      if (!isModelPath(v) && !(OBJECT_DETECTOR_MODELS as readonly string[]).includes(v)) {
        bad(`expected one of ${OBJECT_DETECTOR_MODELS.join(', ')} or a path to an .onnx file`);
      }
      return v;
    case 'string':
    case 'path':
      if (v === '') bad('must not be empty');
      return v;
  }
}

/**
 * Parses `serve` flags and EDGECV_* environment variables. Throws ConfigError on anything invalid.
 * `cwd` resolves relative paths (data dir, certificate files, model dir).
 */
export function parseServerConfig(args: readonly string[], env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): ServerConfig {
  const options = Object.fromEntries(
    Object.values(SERVER_OPTIONS).map((s: OptionSpec) => [s.flag, { type: s.kind === 'flag' ? ('boolean' as const) : ('string' as const) }]),
  );
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...args], options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }

  const out: Record<string, string | number | boolean | undefined> = {};
  for (const [key, spec] of Object.entries(SERVER_OPTIONS) as [keyof ServerConfig, OptionSpec][]) {
    const flagValue = values[spec.flag];
    const envValue = env[spec.env];
    let v: string | number | boolean | undefined;
    if (typeof flagValue === 'boolean') v = flagValue;
    else if (typeof flagValue === 'string') v = parseValue(spec, flagValue, `--${spec.flag}`);
    else if (envValue !== undefined && envValue !== '') v = parseValue(spec, envValue, spec.env);
    else v = spec.default;
    if ((spec.kind === 'path' || (spec.kind === 'model' && isModelPath(String(v)))) && typeof v === 'string') v = path.resolve(cwd, v);
    out[key] = v;
  }

  // Every option of the table reaches the config under its own key: no hand-kept lists to forget one in.
  const config: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(out)) {
    if (value !== undefined) config[key] = value;
  }
  return checkCombinations(config as unknown as ServerConfig);
}

/** The identity is written as InfluxDB tags with --metrics-sink: a value InfluxDB cannot store is refused here, not at every send. */
function checkSinkTags(config: ServerConfig): void {
  for (const key of ['region', 'appOrg', 'appname', 'appvers', 'cluster', 'clusterorg', 'cloudlet', 'cloudletorg', 'pod'] as const) {
    const value = config[key];
    const why = value === undefined ? null : unstorableTagValue(value);
    if (why !== null) {
      const spec = SERVER_OPTIONS[key];
      throw new ConfigError(`--${spec.flag} (${spec.env}) ${JSON.stringify(value)} ${why}: InfluxDB (--metrics-sink) cannot store it as a tag`);
    }
  }
}

/** Rules that join two options. */
function checkCombinations(config: ServerConfig): ServerConfig {
  if ((config.objectLabels !== undefined || config.objectInputSize !== undefined) && !isModelPath(config.objectModel ?? '')) {
    throw new ConfigError('--object-labels and --object-input-size go with an own --object-model /path/model.onnx');
  }
  if (config.metricsSink !== undefined) {
    try {
      parseInfluxUrl(config.metricsSink); // files are read when the sink opens
    } catch (e) {
      throw new ConfigError(`invalid --metrics-sink: ${(e as Error).message}`);
    }
    checkSinkTags(config);
  } else if (config.metricsSinkCredentials !== undefined || config.metricsSinkCa !== undefined) {
    throw new ConfigError('--metrics-sink-credentials and --metrics-sink-ca go with --metrics-sink');
  }
  try {
    parseAllowedOrigins(config.allowedOrigins);
    parseAllowedHosts(config.allowedHosts);
    parseTrustedProxies(config.trustedProxies);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  if (config.httpRoutes !== undefined && config.httpPort === undefined) {
    throw new ConfigError('--http-routes goes with --http-port: it says what the plain-HTTP listener serves');
  }
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) {
    throw new ConfigError('--tls-cert and --tls-key go together: give both, or neither for a self-signed certificate');
  }
  return config;
}

/** A duration flag of another command (e.g. the console's --drain-timeout), read as the server's are. */
export function parseDurationMs(raw: string, origin: string): number {
  return parseValue(SERVER_OPTIONS.drainTimeout, raw, origin) as number;
}

/** Help text for the server flags. */
export function serverOptionsHelp(): string {
  return Object.values(SERVER_OPTIONS)
    .map((s: OptionSpec) => `  --${`${s.flag}${s.kind === 'flag' ? '' : ' <v>'}`.padEnd(26)} ${s.help}  [${s.env}]`)
    .join('\n');
}
