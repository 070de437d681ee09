import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { TlsConfig } from '../config/system.js';
import type { Gateway } from '../gateway.js';
import { json } from './http.js';
import type { AdminRoute } from './router.js';

/** One certificate file of system.yaml, as `GET /api/tls/certs` lists it (docs/admin-api.md). */
export interface CertFileInfo {
  /** The system.yaml key that names the file: `tls.cert_path`, `tls.sni_certs[0].cert_path`, … */
  source: string;
  /** The SNI name of an `sni_certs` entry; absent for a listener's default certificate. */
  server_name?: string;
  cert_path: string;
  subject: string | null;
  sans: string[];
  issuer: string | null;
  serial: string | null;
  not_before: string | null;
  not_after: string | null;
  /** Whole days until `not_after` (negative once expired). */
  days_left: number | null;
  /** Why the file could not be read or parsed; the other fields are then null. */
  error?: string;
}

interface Slot {
  source: string;
  server_name?: string;
  cert_path: string;
}

/** Every `cert_path` of a TLS block: the default certificate and each SNI one. */
function slotsOf(label: string, tls: TlsConfig | undefined): Slot[] {
  if (tls === undefined) return [];
  const slots: Slot[] = [];
  if (tls.cert_path !== undefined) slots.push({ source: `${label}.cert_path`, cert_path: tls.cert_path });
  tls.sni_certs.forEach((sni, i) => {
    if (sni.cert_path !== undefined)
      slots.push({
        source: `${label}.sni_certs[${i}].cert_path`,
        server_name: sni.server_name,
        cert_path: sni.cert_path,
      });
  });
  return slots;
}

const DAY_MS = 86_400_000;

/** `DNS:a.example, IP Address:10.0.0.1` → `['DNS:a.example', 'IP:10.0.0.1']`. */
const sansOf = (cert: X509Certificate): string[] =>
  (cert.subjectAltName ?? '')
    .split(/,\s*/)
    .filter((s) => s !== '')
    .map((s) => s.replace(/^IP Address:/, 'IP:'));

/** Reads and parses one file; the first certificate of a chain is the one served to clients. */
export async function describeCertFile(slot: Slot, now = Date.now()): Promise<CertFileInfo> {
  const empty = { subject: null, sans: [], issuer: null, serial: null, not_before: null, not_after: null };
  let pem: Buffer;
  try {
    pem = await readFile(slot.cert_path);
  } catch (err) {
    return {
      ...slot,
      ...empty,
      days_left: null,
      error: `cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    };
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch (err) {
    return { ...slot, ...empty, days_left: null, error: `not a PEM certificate: ${(err as Error).message}` };
  }
  const notAfter = Date.parse(cert.validTo);
  return {
    ...slot,
    subject: cert.subject.replaceAll('\n', ', '),
    sans: sansOf(cert),
    issuer: cert.issuer.replaceAll('\n', ', '),
    serial: cert.serialNumber,
    not_before: new Date(Date.parse(cert.validFrom)).toISOString(),
    not_after: new Date(notAfter).toISOString(),
    days_left: Math.floor((notAfter - now) / DAY_MS),
  };
}

/**
 * `GET /api/tls/certs`: the certificate files of system.yaml (`tls`, `admin.tls`, `stream[].tls`)
 * with subject, SANs and expiry, read at each call so a renewed file shows at once. Certificates
 * are public; the key files are never opened.
 */
export function certFileRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/tls/certs',
      auth: true,
      handler: async () => {
        const system = gateway.system;
        const slots = [
          ...slotsOf('tls', system.tls),
          ...slotsOf('admin.tls', system.admin?.tls),
          ...system.stream.flatMap((s, i) => slotsOf(`stream[${i}].tls`, s.tls)),
        ];
        return json(200, { certs: await Promise.all(slots.map((slot) => describeCertFile(slot))) });
      },
    },
  ];
}
