import { useCallback, useEffect, useState } from 'react';
import { describe, getJson, postJson } from '../api.js';
import { useReadOnly } from '../session/role.js';

interface Cert {
  id: string;
  domains: string[];
  state: string;
  not_after: string | null;
  issuer: string | null;
  next_renewal_at: string | null;
  last_error: string | null;
}

interface AcmeState {
  enabled: boolean;
  storage?: string;
  certs: Cert[];
}

/** ACME certificates: state, expiry, next renewal, last error; renew on demand. */
export function CertificatesView() {
  const readOnly = useReadOnly();
  const [state, setState] = useState<AcmeState | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  const load = useCallback(async () => setState(await getJson<AcmeState>('/api/acme/certs')), []);
  useEffect(() => {
    load().catch((err: unknown) => setMessage(describe(err)));
  }, [load]);

  const renew = async (id: string) => {
    try {
      const r = await postJson<{ scheduled: boolean; reason?: string }>(
        `/api/acme/certs/${encodeURIComponent(id)}/renew`,
        {},
      );
      setMessage(r.scheduled ? `Renewal of ${id} scheduled.` : `Not renewed: ${r.reason ?? 'not due'}.`);
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
                <td>{c.state}</td>
                <td>{c.not_after ?? '—'}</td>
                <td>{c.next_renewal_at ?? '—'}</td>
                <td className="muted">{c.last_error ?? ''}</td>
                <td className="actions">
                  {!readOnly && (
                    <button type="button" onClick={() => void renew(c.id)}>
                      Renew
                    </button>
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
