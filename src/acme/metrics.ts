import { Counter, Gauge, type Registry } from 'prom-client';
import { CERT_STATES, type AcmeSample } from '../acme/index.js';

/**
 * Metrics of the ACME-managed certificates, read from the manager when
 * scraped: enough for "expires within 7 days" and "renewal keeps failing"
 * alerts.
 */
export function registerAcmeMetrics(registry: Registry, samples: () => readonly AcmeSample[]): void {
  const registers = [registry];
  new Gauge({
    name: 'gateway_acme_cert_not_after_timestamp_seconds',
    help: 'Expiry of the served ACME certificate, unix seconds (0 while a placeholder serves).',
    labelNames: ['cert_id'],
    registers,
    collect() {
      this.reset();
      for (const s of samples()) this.labels(s.id).set(s.notAfter);
    },
  });
  new Gauge({
    name: 'gateway_acme_cert_state',
    help: 'State of each ACME certificate: 1 for its current state, 0 for the others.',
    labelNames: ['cert_id', 'state'],
    registers,
    collect() {
      this.reset();
      for (const s of samples())
        for (const state of CERT_STATES) this.labels(s.id, state).set(s.state === state ? 1 : 0);
    },
  });
  new Counter({
    name: 'gateway_acme_renewals_total',
    help: 'ACME orders (issuance and renewal) since start, by outcome.',
    labelNames: ['cert_id', 'result'],
    registers,
    collect() {
      this.reset();
      for (const s of samples()) {
        this.labels(s.id, 'success').inc(s.success);
        this.labels(s.id, 'failure').inc(s.failure);
      }
    },
  });
  new Gauge({
    name: 'gateway_acme_last_renewal_attempt_timestamp_seconds',
    help: 'Unix seconds of the last ACME order attempt (0 before the first).',
    labelNames: ['cert_id'],
    registers,
    collect() {
      this.reset();
      for (const s of samples()) this.labels(s.id).set(s.lastAttempt);
    },
  });
}
