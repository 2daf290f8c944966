// The five metrics series: their API names, value columns in answer order, and how each is stored.

export const SELECTORS = ['cpu', 'mem', 'disk', 'network', 'connections'] as const;
export type Selector = (typeof SELECTORS)[number];

export function isSelector(s: string): s is Selector {
  return (SELECTORS as readonly string[]).includes(s);
}

export interface ValueColumn {
  /** Column name in the answer. */
  name: string;
  /** Column name in SQLite. */
  sql: string;
  /** 'int' columns are answered as JSON integers, 'float' as JSON numbers. */
  type: 'int' | 'float';
}

const ints = (...pairs: [string, string][]): ValueColumn[] => pairs.map(([name, sql]) => ({ name, sql, type: 'int' }));

export const VALUE_COLUMNS: Record<Selector, readonly ValueColumn[]> = {
  cpu: [{ name: 'cpu', sql: 'cpu', type: 'float' }],
  mem: ints(['mem', 'mem']),
  disk: ints(['disk', 'disk']),
  network: ints(['sendBytes', 'send_bytes'], ['recvBytes', 'recv_bytes']),
  connections: [
    ...ints(
      ['port', 'port'],
      ['active', 'active'],
      ['handled', 'handled'],
      ['accepts', 'accepts'],
      ['bytesSent', 'bytes_sent'],
      ['bytesRecvd', 'bytes_recvd'],
    ),
    ...(
      [
        ['P0', 'p0'],
        ['P25', 'p25'],
        ['P50', 'p50'],
        ['P75', 'p75'],
        ['P90', 'p90'],
        ['P95', 'p95'],
        ['P99', 'p99'],
        ['P99.5', 'p99_5'],
        ['P99.9', 'p99_9'],
        ['P100', 'p100'],
      ] as const
    ).map(([name, sql]): ValueColumn => ({ name, sql, type: 'float' })),
  ],
};

/** Tag columns after `time`, in answer order; all strings. */
export const TAG_COLUMNS = ['app', 'ver', 'cluster', 'clusterorg', 'cloudlet', 'cloudletorg', 'apporg', 'pod'] as const;
export type TagColumn = (typeof TAG_COLUMNS)[number];

export function seriesName(selector: Selector): string {
  return `appinst-${selector}`;
}

export function seriesColumns(selector: Selector): string[] {
  return ['time', ...TAG_COLUMNS, ...VALUE_COLUMNS[selector].map((c) => c.name)];
}
