import { useCallback, useEffect, useState } from 'react';
import { describe, getJson, postJson } from '../api.js';
import { useReadOnly } from '../session/role.js';

interface Cert {
  id: string;
  domains: string[];
  state: string;
  not_after: string | null;
  issuer: string | null;
  serial: string | null;
  next_renewal_at: string | null;
  last_attempt_at: string | null;
  last_error: string | null;
}

/** A certificate file of system.yaml (`GET /api/tls/certs`). */
interface CertFile {
  source: string;
  server_name?: string;
  cert_path: string;
  subject: string | null;
  sans: string[];
  issuer: string | null;
  not_after: string | null;
  days_left: number | null;
  error?: string;
}

/** Fewer days than this left: the expiry shows as a warning. */
const EXPIRY_WARNING_DAYS = 21;

function expiry(c: CertFile): { text: string; className: string } {
  if (c.not_after === null || c.days_left === null) return { text: c.error ?? '—', className: 'kind-error' };
  const day = c.not_after.slice(0, 10);
  if (c.days_left < 0) return { text: `${day} (expired)`, className: 'kind-error' };
  const left = `${day} (${c.days_left} day${c.days_left === 1 ? '' : 's'} left)`;
  return { text: left, className: c.days_left < EXPIRY_WARNING_DAYS ? 'kind-outcome' : '' };
}

/** The certificates system.yaml names by file (tls.cert_path, sni_certs, admin.tls, stream listeners). */
function CertFiles() {
  const [files, setFiles] = useState<CertFile[] | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  useEffect(() => {
    getJson<{ certs: CertFile[] }>('/api/tls/certs').then(
      (r) => setFiles(r.certs),
      (err: unknown) => setMessage(describe(err)),
    );
  }, []);
  return (
    <section aria-labelledby="cert-files-title">
      <h2 id="cert-files-title">Certificate files</h2>
      {message !== undefined && <div className="notice">{message}</div>}
      {files !== undefined && files.length === 0 && (
        <p className="muted">No certificate files (system.yaml tls.cert_path, tls.sni_certs, admin.tls).</p>
      )}
      {files !== undefined && files.length > 0 && (
        <table className="list" aria-label="Certificate files">
          <thead>
            <tr>
              <th>Key</th>
              <th>File</th>
              <th>Subject</th>
              <th>Names (SANs)</th>
              <th>Expires</th>
            </tr>
          </thead>
          <tbody>
            {files.map((c) => {
              const e = expiry(c);
              return (
                <tr key={c.source} data-cert-file={c.source}>
                  <td>
                    <code>{c.source}</code>
                    {c.server_name !== undefined && <div className="muted">SNI {c.server_name}</div>}
                  </td>
                  <td className="wrap-anywhere">
                    <code>{c.cert_path}</code>
                  </td>
                  <td data-field="subject">{c.subject ?? '—'}</td>
                  <td data-field="sans">{c.sans.join(', ')}</td>
                  <td data-field="expires" className={e.className}>
                    {e.text}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

interface AcmeState {
  enabled: boolean;
  storage?: string;
  certs: Cert[];
}

/** While an order may be under way (a placeholder, a renewal), the list refreshes this often. */
const REFRESH_MS = 1500;

const settling = (state: AcmeState | undefined, pending: Set<string>): boolean =>
  state !== undefined &&
  state.certs.some((c) => c.state === 'placeholder' || c.state === 'renewing' || pending.has(c.id));

/**
 * ACME certificates: state, expiry, serial, next renewal, last error; renew on
 * demand (Force renew re-issues a certificate that is not due yet). The list
 * refreshes itself until no order is under way.
 */
export function CertificatesView() {
  const readOnly = useReadOnly();
  const [state, setState] = useState<AcmeState | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  // Certificates whose scheduled renewal has not been seen to finish: id → last_attempt_at when asked.
  const [pending, setPending] = useState<Map<string, string | null>>(new Map());
  const load = useCallback(async () => {
    const next = await getJson<AcmeState>('/api/acme/certs');
    setState(next);
    setPending((before) => {
      const still = new Map(before);
      for (const c of next.certs) {
        if (still.has(c.id) && c.state !== 'renewing' && c.last_attempt_at !== still.get(c.id))
          still.delete(c.id);
      }
      return still.size === before.size ? before : still;
    });
  }, []);
  useEffect(() => {
    load().catch((err: unknown) => setMessage(describe(err)));
  }, [load]);
  const busy = settling(state, new Set(pending.keys()));
  useEffect(() => {
    if (!busy) return undefined;
    const timer = window.setInterval(() => {
      load().catch((err: unknown) => setMessage(describe(err)));
    }, REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [busy, load]);

  const renew = async (cert: Cert, force: boolean) => {
    try {
      const r = await postJson<{ scheduled: boolean; reason?: string }>(
        `/api/acme/certs/${encodeURIComponent(cert.id)}/renew${force ? '?force=true' : ''}`,
        {},
      );
      if (r.scheduled) setPending((p) => new Map(p).set(cert.id, cert.last_attempt_at));
      setMessage(
        r.scheduled
          ? `Renewal of ${cert.id} scheduled.`
          : `Not renewed: ${r.reason === 'not_due' ? `not due before ${cert.next_renewal_at ?? '?'} (Force renew re-issues now)` : (r.reason ?? 'not due')}.`,
      );
      await load();
    } catch (err) {
      setMessage(describe(err));
    }
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>Certificates</h1>
        <span className="muted">
          {state === undefined
            ? ''
            : state.enabled
              ? `ACME on · storage ${state.storage ?? ''}`
              : 'ACME is off (system.yaml acme).'}
        </span>
        {state?.enabled === true && (
          <button
            type="button"
            onClick={() => void load().catch((err: unknown) => setMessage(describe(err)))}
          >
            Refresh
          </button>
        )}
      </div>
      <CertFiles />
      {state?.enabled === true && <h2>Issued by ACME</h2>}
      {message !== undefined && <div className="notice">{message}</div>}
      {state !== undefined && state.certs.length > 0 && (
        <table className="list" aria-label="ACME">
          <thead>
            <tr>
              <th>Id</th>
              <th>Domains</th>
              <th>State</th>
              <th>Expires</th>
              <th>Serial</th>
              <th>Next renewal</th>
              <th>Last error</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {state.certs.map((c) => (
              <tr key={c.id} data-cert={c.id}>
                <td>{c.id}</td>
                <td>{c.domains.join(', ')}</td>
                <td data-field="state">{c.state}</td>
                <td data-field="not_after">{c.not_after ?? '—'}</td>
                <td data-field="serial">
                  <code>{c.serial ?? '—'}</code>
                </td>
                <td>{c.next_renewal_at ?? '—'}</td>
                <td className="muted">{c.last_error ?? ''}</td>
                <td className="actions">
                  {!readOnly && (
                    <>
                      <button type="button" aria-label={`Renew ${c.id}`} onClick={() => void renew(c, false)}>
                        Renew
                      </button>
                      <button
                        type="button"
                        aria-label={`Force renew ${c.id}`}
                        onClick={() => void renew(c, true)}
                      >
                        Force renew
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
