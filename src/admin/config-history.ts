import { canonicalConfig, configSha256 } from '../config/canonical.js';
import { diffConfigs } from '../config/config-diff.js';
import { checkGatewayShape, type GatewayConfig } from '../config/gateway.js';
import { asActor, currentActor, type HistoryEntry } from '../config/history.js';
import { yamlLibrary } from '../config/yaml-data.js';
import type { Gateway } from '../gateway.js';
import {
  adminError,
  badRequest,
  type AdminError,
  bodyLimitsOf,
  json,
  notFound,
  readJsonObject,
  type Reply,
} from './http.js';
import type { AdminRoute } from './router.js';

/** The ETag of a whole configuration: its canonical sha256 (docs/config-as-code.md#apply). */
export const configEtag = (config: GatewayConfig): string => `"${configSha256(config)}"`;

/** A configuration as canonical YAML (stable key order: two dumps of the same state are identical). */
export const canonicalYaml = (config: GatewayConfig): string =>
  yamlLibrary().stringify(canonicalConfig(config), { lineWidth: 0 });

const yamlReply = (text: string, headers?: Record<string, string>): Reply => ({
  status: 200,
  body: text,
  contentType: 'text/yaml; charset=utf-8',
  ...(headers === undefined ? {} : { headers }),
});

const preconditionFailed = (): AdminError =>
  adminError('precondition_failed', {
    message: 'If-Match does not match the running configuration (it changed since it was read)',
  });

function checkWholeIfMatch(header: string | undefined, current: GatewayConfig): void {
  if (header === undefined) return;
  const tags = header.split(',').map((t) => t.trim());
  if (!tags.some((t) => t === '*' || t === configEtag(current))) throw preconditionFailed();
}

const changeList = (before: GatewayConfig, after: GatewayConfig) =>
  diffConfigs(before, after).map(({ kind, section, name }) => ({ kind, section, name }));

/** The history entry a rollback or an apply made: the newest one holding `sha256`. */
const entryOf = (gateway: Gateway, sha256: string): HistoryEntry | undefined =>
  gateway.history.list().find((e) => e.sha256 === sha256);

/**
 * `GET /api/config` (canonical YAML + ETag), `PUT /api/config` (replace the whole configuration,
 * `If-Match`, `?dry_run=true`), `GET /api/config/history`, `GET /api/config/history/:version`,
 * `POST /api/config/rollback` (docs/admin-api.md#configuration-history).
 */
export function configHistoryRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/config',
      auth: true,
      handler: () => {
        const config = gateway.runtime.config;
        return yamlReply(canonicalYaml(config), { etag: configEtag(config) });
      },
    },
    {
      method: 'PUT',
      path: '/api/config',
      auth: true,
      handler: async ({ req, query }) => {
        const body = await readJsonObject(req, bodyLimitsOf(gateway.system));
        const candidate = checkGatewayShape(structuredClone(body));
        const ifMatch = req.headers['if-match'];
        const dry = query.get('dry_run') === 'true' || query.get('dry_run') === '1';
        if (dry) {
          const current = gateway.runtime.config;
          checkWholeIfMatch(ifMatch, current);
          const runtime = gateway.compile(candidate);
          await runtime.close();
          return json(200, {
            status: 'valid',
            dry_run: true,
            sha256: configSha256(candidate),
            changes: changeList(current, candidate),
            warnings: runtime.warnings,
          });
        }
        let before: GatewayConfig | undefined;
        const actor = { user: currentActor()?.user ?? null, via: 'apply' as const };
        const runtime = await asActor(actor, () =>
          gateway.apply((current) => {
            checkWholeIfMatch(ifMatch, current);
            before = current;
            return candidate;
          }, 'admin'),
        );
        const sha256 = configSha256(runtime.config);
        return json(200, {
          status: 'applied',
          version: entryOf(gateway, sha256)?.version ?? null,
          sha256,
          changes: before === undefined ? [] : changeList(before, runtime.config),
          warnings: runtime.warnings,
        });
      },
    },
    {
      method: 'GET',
      path: '/api/config/history',
      auth: true,
      // Read afresh: with etcd, versions other gateways on the prefix added are listed too.
      handler: async () => json(200, { versions: await gateway.history.versions() }),
    },
    {
      method: 'GET',
      path: '/api/config/history/:version',
      auth: true,
      handler: async ({ params }) => {
        const version = Number(params.version);
        if (!Number.isInteger(version)) throw notFound();
        const content = await gateway.history.content(version);
        if (content === undefined) throw notFound();
        return yamlReply(canonicalYaml(content), { etag: configEtag(content) });
      },
    },
    {
      method: 'POST',
      path: '/api/config/rollback',
      auth: true,
      handler: async ({ req }) => {
        const body = await readJsonObject(req, bodyLimitsOf(gateway.system));
        const version = body['version'];
        if (typeof version !== 'number' || !Number.isInteger(version))
          throw badRequest("'version' must be the integer of a history entry");
        return json(200, await rollbackTo(gateway, version));
      },
    },
  ];
}

/**
 * Applies the content of history `version` again, as a new version with source `rollback` (and
 * the same sha256); throws AdminError 404 for a version the history does not hold.
 */
export async function rollbackTo(
  gateway: Gateway,
  version: number,
): Promise<HistoryEntry & { rolled_back_to: number }> {
  const content = await gateway.history.content(version);
  if (content === undefined)
    throw adminError('not_found', { message: `no version ${version} in the history` });
  const actor = {
    user: currentActor()?.user ?? null,
    via: 'rollback' as const,
    summary: `rollback to version ${version}`,
  };
  const runtime = await asActor(actor, () => gateway.apply(checkGatewayShape(content), 'admin'));
  const entry = entryOf(gateway, configSha256(runtime.config)) as HistoryEntry;
  return { ...entry, rolled_back_to: version };
}
