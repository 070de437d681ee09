import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { Client, ResultCodeError } from 'ldapts';

/** Where and how to bind; built once per node. */
export interface LdapTarget {
  url: string;
  /** StartTLS on an `ldap://` connection before binding. */
  startTls: boolean;
  tls: ConnectionOptions;
  /** Connect + StartTLS + bind. */
  timeoutMs: number;
}

/** What a bind attempt means for the request. */
export type BindOutcome =
  | { kind: 'bound' }
  /** The directory answered and refused these credentials. */
  | { kind: 'refused'; reason: string }
  /** The directory could not be asked: transport, TLS, timeout, or a server-side refusal to work. */
  | { kind: 'unavailable'; reason: string }
  | { kind: 'aborted' };

/** Result codes that judge the presented credentials, not the directory (RFC 4511 §4.1.9). */
const REFUSALS = new Set([
  19, // constraintViolation: password policy (locked, expired)
  32, // noSuchObject
  34, // invalidDNSyntax
  48, // inappropriateAuthentication
  49, // invalidCredentials
  50, // insufficientAccessRights
]);

/**
 * One simple bind on a fresh connection, bounded by `timeoutMs` and by
 * `signal`. A bind changes the identity of its connection, so connections
 * are never shared between requests.
 */
export async function simpleBind(
  target: LdapTarget,
  dn: string,
  password: string,
  signal: AbortSignal,
): Promise<BindOutcome> {
  if (signal.aborted) return { kind: 'aborted' };
  const sockets: (Socket | TLSSocket)[] = [];
  const client = new Client({
    url: target.url,
    timeout: target.timeoutMs,
    connectTimeout: target.timeoutMs,
    // ldapts treats any tlsOptions as "connect with TLS"; StartTLS gets them in startTLS() instead.
    ...(target.url.startsWith('ldaps:') ? { tlsOptions: target.tls } : {}),
    // Keep hold of the sockets so a deadline or a departed client can tear them down mid-connect.
    createConnection: ((port: number, host: string) => track(sockets, netConnect(port, host))) as never,
    createSecureConnection: ((...args: Parameters<typeof tlsConnect>) =>
      track(sockets, tlsConnect(...args))) as never,
  });

  let abandoned = false;
  let abandon: (outcome: BindOutcome) => void = ignore;
  const cut = new Promise<BindOutcome>((resolve) => {
    abandon = (outcome) => {
      abandoned = true;
      resolve(outcome);
    };
  });
  const timer = setTimeout(
    () => abandon({ kind: 'unavailable', reason: `no answer within ${target.timeoutMs} ms` }),
    target.timeoutMs,
  );
  const onAbort = (): void => abandon({ kind: 'aborted' });
  signal.addEventListener('abort', onAbort, { once: true });

  const attempt = (async (): Promise<BindOutcome> => {
    if (target.startTls) await client.startTLS(target.tls);
    await client.bind(dn, password);
    return { kind: 'bound' };
  })().catch(classify);

  try {
    return await Promise.race([attempt, cut]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    if (abandoned) {
      // Still connecting or waiting for the answer: tear down; the pending bind rejects into `attempt`.
      for (const socket of sockets) socket.destroy(new Error('bind abandoned'));
    } else {
      await client.unbind().catch(ignore);
    }
  }
}

function ignore(): void {}

function track<S extends Socket>(sockets: Socket[], socket: S): S {
  sockets.push(socket);
  return socket;
}

function classify(err: unknown): BindOutcome {
  if (err instanceof ResultCodeError) {
    return REFUSALS.has(err.code)
      ? { kind: 'refused', reason: err.message }
      : { kind: 'unavailable', reason: `directory answered result code ${err.code}: ${err.message}` };
  }
  const error = err as NodeJS.ErrnoException;
  return {
    kind: 'unavailable',
    reason: error.code === undefined ? String(error.message) : `${error.message} (${error.code})`,
  };
}

/** RFC 4514 escaping of an attribute value, so a username cannot add RDNs to the bind DN. */
export function escapeDnValue(value: string): string {
  let out = value.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`).replace(/\0/g, '\\00');
  if (out.startsWith(' ') || out.startsWith('#')) out = `\\${out}`;
  if (out.endsWith(' ')) out = `${out.slice(0, -1)}\\ `;
  return out;
}
