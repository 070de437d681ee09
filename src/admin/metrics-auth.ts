import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { MetricsAuthConfig } from '../config/metrics-auth.js';
import { basicAuthVerifier } from './auth.js';

export {
  metricsAuthIssues,
  MIN_METRICS_TOKEN_LENGTH,
  type MetricsAuthConfig,
} from '../config/metrics-auth.js';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * True when `req` carries the metrics-only credential. It opens GET /metrics
 * and nothing else; the caller still sends every other credential through the
 * admin check (and its failed-login throttle).
 */
export function metricsAuthVerifier(
  config: MetricsAuthConfig | undefined,
): (req: IncomingMessage) => boolean {
  if (config === undefined) return () => false;
  const basic =
    config.username !== undefined && config.password !== undefined
      ? basicAuthVerifier([{ username: config.username, password: config.password, role: 'viewer' }])
      : undefined;
  const token = config.bearer_token === undefined ? undefined : digest(config.bearer_token);
  return (req) => {
    const header = req.headers.authorization;
    if (header === undefined) return false;
    const bearer = /^bearer\s+(\S+)\s*$/i.exec(header);
    if (bearer !== null) return token !== undefined && timingSafeEqual(digest(bearer[1]!), token);
    return basic?.(header).kind === 'ok';
  };
}
