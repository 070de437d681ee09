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
      {message !== undefined && <div className="notice">{message}</div>}
      {state !== undefined && state.certs.length > 0 && (
        <table className="list" aria-label="Certificates">
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
