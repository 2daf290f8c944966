// `edgecv console --help`, apart from the console itself so that the CLI loads the server modules only to run it.

import { DEFAULT_DRAIN_TIMEOUT_MS } from '../server/drain.js';

export const DEFAULT_CONSOLE_PORT = 8010;

export const CONSOLE_USAGE = `usage: edgecv console --region NAME=URL [--region NAME=URL ...] [flags]

Serves POST /api/v1/login and POST /api/v1/auth/metrics/app over HTTPS for every instance of a region,
from that region's InfluxDB (instances send their samples there with --metrics-sink URL).

  --region NAME=URL          a region and its InfluxDB, http(s)://[user:pass@]host:8086/database; repeatable
                             [EDGECV_CONSOLE_REGIONS: NAME=URL,NAME=URL]
  --port P                   TCP port (default ${DEFAULT_CONSOLE_PORT}) [EDGECV_CONSOLE_PORT]
  --host H                   address to listen on (default 0.0.0.0) [EDGECV_CONSOLE_HOST]
  --data-dir D               users (edgecv user add --data-dir D), JWT key, self-signed TLS in D/tls
                             (default ./console-data) [EDGECV_CONSOLE_DATA_DIR]
  --tls-cert F --tls-key F   PEM certificate and key (default: self-signed in D/tls)
  --influx-credentials F     file whose first line is USER:PASSWORD or 'token TOKEN', for every region
  --influx-ca F              PEM CA certificate that signed an https:// InfluxDB
  --drain-timeout D          on SIGTERM/SIGINT, time the requests in flight get before every connection and
                             region query is ended (default ${DEFAULT_DRAIN_TIMEOUT_MS / 1000}s) [EDGECV_CONSOLE_DRAIN_TIMEOUT]`;
