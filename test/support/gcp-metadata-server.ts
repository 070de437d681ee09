import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Compute Engine / GKE metadata server, the part Google's client libraries use for
 * credentials (https://cloud.google.com/compute/docs/metadata/querying-metadata,
 * https://cloud.google.com/compute/docs/access/authenticate-workloads#applications):
 * - every request must carry `Metadata-Flavor: Google` and no `X-Forwarded-For`, else 403;
 *   every answer carries `Metadata-Flavor: Google`;
 * - `GET /computeMetadata/v1/instance/service-accounts/default/token` →
 *   `{"access_token", "expires_in", "token_type": "Bearer"}` (application/json), the same token
 *   until 5 minutes before it expires, `expires_in` counting down, as the real server caches it;
 * - `GET /computeMetadata/v1/project/project-id` → the project id (application/text);
 * - anything else 404.
 * Tokens come from `mint` (the test Secret Manager's issueToken), so they work there.
 * GCE_METADATA_HOST=`host` (host:port) points a client at it.
 */
export interface GcpMetadataServer {
  /** host:port, as GCE_METADATA_HOST takes it. */
  host: string;
  /** Every request: path, whether it carried the flavor header, and the status answered. */
  readonly requests: { path: string; flavor: boolean; status: number }[];
  close(): Promise<void>;
}

const REUSE_MARGIN_MS = 5 * 60 * 1000;

export async function startGcpMetadataServer(options: {
  project: string;
  mint: () => { access_token: string; expires_in: number };
  /** Answer without the Metadata-Flavor header (not a metadata server). */
  noFlavor?: boolean;
}): Promise<GcpMetadataServer> {
  const requests: GcpMetadataServer['requests'] = [];
  let held: { token: string; expiresAt: number } | undefined;
  const answer = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, {
      ...(options.noFlavor === true ? {} : { 'metadata-flavor': 'Google' }),
      'content-type': type,
      server: 'Metadata Server for VM',
    });
    res.end(body);
    return status;
  };
  const server = createServer((req, res) => {
    req.resume();
    const path = new URL(req.url ?? '/', 'http://metadata').pathname;
    const flavor = req.headers['metadata-flavor'] === 'Google';
    const entry = { path, flavor, status: 0 };
    requests.push(entry);
    if (!flavor || req.headers['x-forwarded-for'] !== undefined) {
      entry.status = answer(
        res,
        403,
        'text/html; charset=UTF-8',
        `Your client does not have permission to get URL ${path} from this server. Missing Metadata-Flavor:Google header.\n`,
      );
      return;
    }
    if (req.method === 'GET' && path === '/computeMetadata/v1/instance/service-accounts/default/token') {
      if (held === undefined || held.expiresAt - Date.now() < REUSE_MARGIN_MS) {
        const minted = options.mint();
        held = { token: minted.access_token, expiresAt: Date.now() + minted.expires_in * 1000 };
      }
      const expiresIn = Math.floor((held.expiresAt - Date.now()) / 1000);
      entry.status = answer(
        res,
        200,
        'application/json',
        JSON.stringify({ access_token: held.token, expires_in: expiresIn, token_type: 'Bearer' }),
      );
    } else if (req.method === 'GET' && path === '/computeMetadata/v1/project/project-id')
      entry.status = answer(res, 200, 'application/text', options.project);
    else entry.status = answer(res, 404, 'text/html; charset=UTF-8', 'Not Found\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
