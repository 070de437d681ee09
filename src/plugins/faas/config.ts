import type { PluginEnv } from '../../core/plugin.js';

/** Config keys shared by every function-as-a-service node. */
export interface CalloutConfig {
  timeout: number;
  ssl_verify: boolean;
  keepalive?: boolean;
  keepalive_pool?: number;
  keepalive_timeout?: number;
}

export const DEFAULT_TIMEOUT_MS = 3000;

/** Schema of `timeout`, `ssl_verify` (default per type) and the accepted-but-ignored keepalive trio. */
export function calloutProperties(sslVerifyDefault: boolean): Record<string, unknown> {
  return {
    ssl_verify: {
      type: 'boolean',
      default: sslVerifyDefault,
      description: 'Verify the endpoint TLS certificate chain and name.',
    },
    timeout: {
      type: 'integer',
      minimum: 1,
      default: DEFAULT_TIMEOUT_MS,
      description: 'Whole-call deadline in ms: connect, request and the complete response body.',
    },
    keepalive: {
      type: 'boolean',
      description: 'Accepted for compatibility; connections always come from the shared outbound pool.',
    },
    keepalive_pool: { type: 'integer', minimum: 1, description: 'Accepted for compatibility; ignored.' },
    keepalive_timeout: { type: 'integer', minimum: 1, description: 'Accepted for compatibility; ignored.' },
  };
}

/** Connection reuse belongs to the shared pools (STYLE §7): say so when a config tries to tune it. */
export function warnIgnoredKeepalive(config: CalloutConfig, env: PluginEnv): void {
  for (const key of ['keepalive', 'keepalive_pool', 'keepalive_timeout'] as const) {
    if (config[key] !== undefined) env.warn(key, 'ignored: connections come from the shared outbound pool');
  }
}

/** The `success` port of every function node: it replaces the upstream. */
export const FUNCTION_OUTPUTS = {
  success: {
    kind: 'success',
    description: 'The function answered (any status); ctx.response holds its reply. Wire it to client.in.',
  },
} as const;
