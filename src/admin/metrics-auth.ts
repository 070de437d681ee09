import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ConfigIssue } from '../config/schema-validate.js';
import { basicAuthVerifier } from './auth.js';

/** system.yaml `admin.metrics_auth`: a Basic pair, a bearer token, or both. */
export interface MetricsAuthConfig {
  username?: string;
  password?: string;
  bearer_token?: string;
}

/** A bearer token shorter than this is refused at load: it would be guessable. */
export const MIN_METRICS_TOKEN_LENGTH = 16;

/** Load-time checks of `admin.metrics_auth`; each issue names its key path. */
export function metricsAuthIssues(config: MetricsAuthConfig | undefined): ConfigIssue[] {
  if (config === undefined) return [];
  const at = 'admin.metrics_auth';
  const issues: ConfigIssue[] = [];
  const { username, password, bearer_token: token } = config;
  if (username === undefined && password === undefined && token === undefined)
    issues.push({ path: at, message: 'set username and password, or bearer_token' });
  if ((username === undefined) !== (password === undefined))
    issues.push({
      path: `${at}.${username === undefined ? 'username' : 'password'}`,
      message: 'username and password go together',
    });
  if (username === '') issues.push({ path: `${at}.username`, message: 'must not be empty' });
  if (password === '') issues.push({ path: `${at}.password`, message: 'must not be empty' });
  if (token !== undefined && token.length < MIN_METRICS_TOKEN_LENGTH)
    issues.push({
      path: `${at}.bearer_token`,
      message: `must be at least ${MIN_METRICS_TOKEN_LENGTH} characters`,
    });
  return issues;
}

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
