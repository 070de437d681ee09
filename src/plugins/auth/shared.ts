import type { Context } from '../../core/context.js';
import { ConfigError, type ConsumerIndex, type ConsumerRecord, type PortSpec } from '../../core/plugin.js';

/** Port specs shared by the credential auth plugins (docs/plugins/README.md). */
export const AUTH_OUTPUTS = {
  success: { kind: 'success' },
  denied: {
    kind: 'outcome',
    description:
      'Authentication or authorization was denied; a 4xx response is prepared. Wire to client (or a custom denial handler).',
  },
} as const satisfies Record<string, PortSpec>;

/** Port specs of the plugins that refuse a request by rule (acl, consumer-restriction, the security family). */
export const RESTRICTION_OUTPUTS = {
  success: { kind: 'success' },
  denied: {
    kind: 'outcome',
    description: 'The request was denied by a policy rule; a 4xx response is prepared. Wire to client.',
  },
} as const satisfies Record<string, PortSpec>;

/**
 * Attaches a matched consumer: `message.consumer.*` (name, group, labels,
 * custom_id, auth_type) and the `X-Consumer-Username` / `X-Consumer-Custom-ID`
 * request headers upstreams of the reference gateway expect.
 */
export function attachConsumer(ctx: Context, consumer: ConsumerRecord, authType: string): void {
  ctx.setConsumer(
    consumer.group === undefined ? { name: consumer.name } : { name: consumer.name, group: consumer.group },
  );
  ctx.message['consumer.auth_type'] = authType;
  ctx.request.headers['x-consumer-username'] = consumer.name;
  const labels = consumer.labels;
  if (Object.keys(labels).length === 0) return;
  ctx.message['consumer.labels'] = { ...labels };
  const customId = labels['custom_id'];
  if (customId !== undefined) {
    ctx.message['consumer.custom_id'] = customId;
    ctx.request.headers['x-consumer-custom-id'] = customId;
  }
}

/** Resolves `anonymous_consumer` at load time so a typo fails the configuration, not requests. */
export function anonymousConsumer(
  name: string | undefined,
  consumers: ConsumerIndex,
): ConsumerRecord | undefined {
  if (name === undefined) return undefined;
  const consumer = consumers.byName(name);
  if (consumer === undefined) {
    throw new ConfigError('anonymous_consumer', `names no consumer in the consumers section ('${name}')`);
  }
  return consumer;
}

/** The 401 every credential plugin prepares on `denied`; `challenge` is the WWW-Authenticate value. */
export function unauthorized(ctx: Context, message: string, challenge?: string): 'denied' {
  const res = ctx.response;
  res.discardStream();
  res.json(401, { error: 'unauthorized', message });
  if (challenge !== undefined) res.headers['www-authenticate'] = challenge;
  return 'denied';
}

/** The `{message}` rejection of the restriction plugins. */
export function rejected(ctx: Context, status: number, message: string): 'denied' {
  ctx.response.discardStream();
  ctx.response.json(status, { message });
  return 'denied';
}

/** First value of a request header; `name` must already be lowercase. */
export function requestHeader(ctx: Context, name: string): string | undefined {
  const value = ctx.request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Removes a query parameter, keeping the rest of the query string. */
export function deleteQueryParam(ctx: Context, name: string): void {
  const query = ctx.request.query;
  if (!query.has(name)) return;
  query.delete(name);
  ctx.request.query = query;
}

/** Quotes a realm for a challenge header, escaping `"` and `\`. */
export function quoteRealm(realm: string): string {
  return `"${realm.replace(/["\\]/g, '\\$&')}"`;
}

/** A prepared 302 for browser flows (login, callback, logout); never cached. */
export function redirectTo(ctx: Context, location: string): 'redirect' {
  const res = ctx.response;
  res.discardStream();
  res.status = 302;
  res.headers['location'] = location;
  res.headers['cache-control'] = 'no-store';
  res.setBody('');
  return 'redirect';
}
