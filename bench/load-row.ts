// One table row from an autocannon result: the figures every HTTP bench section reports.
import type autocannon from 'autocannon';

export function loadRow(result: autocannon.Result): Record<string, number> {
  return {
    requests: result.requests.total,
    'req/s': result.requests.average,
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}
