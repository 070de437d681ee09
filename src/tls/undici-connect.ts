import type { buildConnector } from 'undici';
import { loadUndici } from '../runtime/load-undici.js';
import type { TlsMaterial } from './client.js';

/**
 * The undici `connect` option of a pool to a TLS origin: plain options, or,
 * with a client certificate, a connector that builds its TLS options again
 * when the pair on disk changed, so new connections present the new pair.
 */
export function undiciConnect(
  tls: TlsMaterial,
  base: { timeout: number; allowH2: boolean },
): buildConnector.BuildOptions | buildConnector.connector {
  const options = (): buildConnector.BuildOptions => ({
    timeout: base.timeout,
    allowH2: base.allowH2,
    rejectUnauthorized: tls.rejectUnauthorized,
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    ...(tls.cert === undefined ? {} : { cert: tls.cert }),
    ...(tls.key === undefined ? {} : { key: tls.key }),
  });
  const servername = tls.servername;
  if (tls.cert === undefined && servername === undefined) return options();
  let built: { cert: Buffer | undefined; connector: buildConnector.connector } | undefined;
  return (opts, callback) => {
    const cert = tls.cert;
    if (built === undefined || built.cert !== cert)
      built = { cert, connector: loadUndici().buildConnector(options()) };
    const { connector } = built;
    // A configured server name wins over the one undici derives from the origin or Host header.
    return connector(servername === undefined ? opts : { ...opts, servername }, callback);
  };
}
