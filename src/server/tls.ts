// TLS material: the operator's certificate (--tls-cert/--tls-key), or a self-signed one created in
// <data-dir>/tls on first start and reused afterwards (re-created when unreadable or about to expire).

import { X509Certificate, createPrivateKey } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';

export interface TlsMaterial {
  cert: string;
  key: string;
  certPath: string;
  keyPath: string;
  /** 'operator': --tls-cert/--tls-key; 'generated': created now; 'reused': created on an earlier start. */
  source: 'operator' | 'generated' | 'reused';
}

export interface TlsOptions {
  dataDir: string;
  tlsCert?: string;
  tlsKey?: string;
}

/**
 * TLS 1.2 and 1.3 only, and in TLS 1.2 only ECDHE key exchange with AEAD ciphers (forward secrecy); the
 * TLS 1.3 suites all have it.
 */
export const TLS_HARDENING = {
  minVersion: 'TLSv1.2',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-ECDSA-CHACHA20-POLY1305',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ].join(':'),
  honorCipherOrder: true,
} as const;

export class TlsError extends Error {
  override name = 'TlsError';
}

const VALID_YEARS = 5;
const RENEW_BEFORE_MS = 24 * 3600 * 1000;

/** Throws unless cert parses, key parses and they belong together. Returns the certificate. */
function checkPair(cert: string, key: string, what: string): X509Certificate {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (e) {
    throw new TlsError(`${what}: certificate is not a PEM X.509 certificate (${(e as Error).message})`);
  }
  let pkey;
  try {
    pkey = createPrivateKey(key);
  } catch (e) {
    throw new TlsError(`${what}: private key is not a readable PEM key (${(e as Error).message})`);
  }
  if (!x509.checkPrivateKey(pkey)) throw new TlsError(`${what}: the private key does not match the certificate`);
  return x509;
}

async function readOperatorFile(file: string, what: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (e) {
    throw new TlsError(`cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

async function writeAtomic(file: string, data: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.rm(tmp, { force: true });
  await fs.writeFile(tmp, data, { mode, flag: 'wx' });
  await fs.chmod(tmp, mode);
  await fs.rename(tmp, file);
}

/** A new self-signed certificate for this host: localhost, the host name, 127.0.0.1 and ::1. */
export async function generateSelfSigned(): Promise<{ cert: string; key: string }> {
  const host = os.hostname();
  const now = new Date();
  const notAfter = new Date(now);
  notAfter.setFullYear(notAfter.getFullYear() + VALID_YEARS);
  const dnsNames = [...new Set(['localhost', host].filter((h) => h && /^[A-Za-z0-9.-]+$/.test(h)))];
  const pems = await generate(
    [
      { name: 'commonName', value: 'edgecv' },
      { name: 'organizationName', value: 'edgecv self-signed' },
    ],
    {
      keySize: 2048,
      algorithm: 'sha256',
      notBeforeDate: new Date(now.getTime() - 60_000),
      notAfterDate: notAfter,
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [...dnsNames.map((value) => ({ type: 2 as const, value })), { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }],
        },
      ],
    },
  );
  return { cert: pems.cert, key: pems.private };
}

export async function loadTls(opts: TlsOptions): Promise<TlsMaterial> {
  if (opts.tlsCert !== undefined || opts.tlsKey !== undefined) {
    if (opts.tlsCert === undefined || opts.tlsKey === undefined) {
      throw new TlsError('--tls-cert and --tls-key go together');
    }
    const cert = await readOperatorFile(opts.tlsCert, 'TLS certificate');
    const key = await readOperatorFile(opts.tlsKey, 'TLS key');
    checkPair(cert, key, `${opts.tlsCert} / ${opts.tlsKey}`);
    return { cert, key, certPath: opts.tlsCert, keyPath: opts.tlsKey, source: 'operator' };
  }

  const dir = path.join(opts.dataDir, 'tls');
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  try {
    const [cert, key] = await Promise.all([fs.readFile(certPath, 'utf8'), fs.readFile(keyPath, 'utf8')]);
    const x509 = checkPair(cert, key, dir);
    if (new Date(x509.validTo).getTime() - Date.now() > RENEW_BEFORE_MS) {
      return { cert, key, certPath, keyPath, source: 'reused' };
    }
  } catch {
    /* missing, unreadable or expiring: make a new one */
  }
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const { cert, key } = await generateSelfSigned();
    await writeAtomic(keyPath, key, 0o600);
    await writeAtomic(certPath, cert, 0o644);
    return { cert, key, certPath, keyPath, source: 'generated' };
  } catch (e) {
    if (e instanceof TlsError) throw e;
    throw new TlsError(`cannot create a self-signed certificate in ${dir}: ${(e as Error).message}`);
  }
}
