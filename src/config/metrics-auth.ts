import type { ConfigIssue } from './schema-validate.js';

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
