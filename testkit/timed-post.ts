// One timed POST over HTTP or HTTPS, as the route benches send it: the round trip in ms and the answer's text.

import http from 'node:http';
import https from 'node:https';

export interface PostRequest {
  path: string;
  body: Buffer;
  contentType: string;
  /** The status the answer must have (200 unless said). */
  status?: number;
}

/** One POST; resolves with the round trip in ms and the answer, rejects on a transport error or a status other than 200. */
export function post(base: string, agent: http.Agent | https.Agent | false, r: PostRequest): Promise<{ ms: number; text: string }> {
  const url = new URL(r.path, base);
  const send = url.protocol === 'https:' ? https.request : http.request;
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        agent,
        rejectUnauthorized: false,
        timeout: 30_000,
        headers: { 'content-type': r.contentType, 'content-length': r.body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === (r.status ?? 200)) resolve({ ms: performance.now() - t0, text });
          else reject(new Error(`POST ${url.pathname}: HTTP ${res.statusCode} ${text.slice(0, 200)}`));
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST ${url.pathname}: no answer in 30 s`)));
    req.on('error', reject);
    req.end(r.body);
  });
}
