import {
  consumerSchema,
  globalRuleSchema,
  pluginConfigSchema,
  policySchema,
  routeSchema,
  storeSchema,
  supernodeSchema,
  type GatewayConfig,
} from '../config/gateway.js';
import { ConfigRejected, formatIssues, validateAgainst } from '../config/schema-validate.js';
import type { Runtime } from '../engine/compile.js';
import type { Gateway } from '../gateway.js';
import {
  AdminError,
  adminError,
  badRequest,
  checkIfMatch,
  etagOf,
  json,
  notFound,
  readJsonObject,
  bodyLimitsOf,
} from './http.js';
import { adminProblemBody } from '../core/errors.js';
import {
  pluginConfigReferences,
  policyReferences,
  referenceIssues,
  storeReferences,
  supernodeReferences,
  type Reference,
} from './references.js';
import type { AdminRoute } from './router.js';
import { configJsonBytes, draftOf } from './config-draft.js';

export type Section =
  'routes' | 'policies' | 'supernodes' | 'plugin_configs' | 'stores' | 'consumers' | 'global_rules';

export interface Named {
  name: string;
  [key: string]: unknown;
}

/** One named collection of gateway.yaml as the Admin API exposes it (docs/admin-api.md). */
export interface ResourceKind {
  /** URL segment under /api. */
  segment: string;
  section: Section;
  /** Singular, for messages: `route 'x' already exists`. */
  label: string;
  schema: object;
  /** `POST /api/<segment>` creates (409 on a duplicate name). */
  create: boolean;
  /** `PUT /api/<segment>/:name` creates a missing item instead of answering 404. */
  upsert: boolean;
  /** Throws an AdminError when `name` may not be deleted from `config`. */
  guardDelete?(config: GatewayConfig, name: string): void;
}

function referencedGuard(label: string, find: (c: GatewayConfig, name: string) => Reference[]) {
  return (config: GatewayConfig, name: string): void => {
    const refs = find(config, name);
    if (refs.length === 0) return;
    const what = `${label} '${name}'`;
    const issues = referenceIssues(what, refs);
    throw badRequest(`${what} is still referenced by ${refs.map((r) => r.label).join(', ')}`, issues);
  };
}

export function resourceKinds(gateway: Gateway): ResourceKind[] {
  return [
    {
      segment: 'routes',
      section: 'routes',
      label: 'route',
      schema: routeSchema,
      create: true,
      // PUT creates a missing route (appended, as POST does), like every other kind (F21).
      upsert: true,
    },
    {
      segment: 'policies',
      section: 'policies',
      label: 'policy',
      schema: policySchema,
      create: false,
      upsert: true,
      guardDelete: referencedGuard('policy', policyReferences),
    },
    {
      segment: 'supernodes',
      section: 'supernodes',
      label: 'supernode',
      schema: supernodeSchema,
      create: false,
      upsert: true,
      guardDelete: referencedGuard('supernode', supernodeReferences),
    },
    {
      segment: 'plugin-configs',
      section: 'plugin_configs',
      label: 'plugin_config',
      schema: pluginConfigSchema,
      create: false,
      upsert: true,
      guardDelete: referencedGuard('plugin_config', pluginConfigReferences),
    },
    {
      segment: 'stores',
      section: 'stores',
      label: 'store',
      schema: storeSchema,
      create: true,
      upsert: true,
      guardDelete(config, name) {
        const refs = storeReferences(config, name, gateway.system.acme);
        if (refs.length === 0) return;
        const details = referenceIssues(`store '${name}'`, refs);
        throw adminError('in_use', {
          message: formatIssues(details),
          referrers: refs.map((r) => r.label),
          details,
        });
      },
    },
    {
      segment: 'consumers',
      section: 'consumers',
      label: 'consumer',
      schema: consumerSchema,
      create: true,
      upsert: true,
    },
    // docs/global-rules.md: list order is the order the rules run in; POST appends.
    {
      segment: 'global-rules',
      section: 'global_rules',
      label: 'global_rule',
      schema: globalRuleSchema,
      create: true,
      upsert: true,
    },
  ];
}

/** The items of one section, by name. */
export const listOf = (config: GatewayConfig, section: Section): Named[] =>
  ((config as unknown as Record<Section, Named[] | undefined>)[section] ??= []);

/**
 * Applies an edit of a deep copy of the current config through the gateway's
 * one apply path. `edit` runs inside the serialized section, so concurrent
 * writers see each other's changes; it throws to refuse the change.
 */
export function mutate(gateway: Gateway, edit: (draft: GatewayConfig) => void): Promise<Runtime> {
  return gateway.apply(async (current) => {
    const draft = draftOf(current);
    edit(draft);
    await checkConfigSize(gateway, current, draft);
    return draft;
  }, 'admin');
}

const DEFAULT_MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/**
 * L8: an Admin write may not grow the configuration past
 * `admin.limits.max_config_bytes` (measured as its JSON, which tracks the
 * size of gateway.yaml). Every later write re-renders and re-compiles the whole
 * file, so one huge value slows them all. A write that shrinks an oversized
 * configuration is let through, so it can be repaired.
 */
async function checkConfigSize(gateway: Gateway, before: GatewayConfig, after: GatewayConfig): Promise<void> {
  const max = gateway.system.admin?.limits.max_config_bytes ?? DEFAULT_MAX_CONFIG_BYTES;
  const size = await configJsonBytes(after);
  if (size <= max || size <= (await configJsonBytes(before))) return;
  throw adminError('config_too_large', {
    message: `the configuration would be ${size} bytes; admin.limits.max_config_bytes allows ${max}`,
  });
}

/**
 * Runs the same edit on a copy of the current config and compiles it without
 * swapping, persisting or counting an apply: the dry run of a write. Throws
 * what the real write would (ConfigRejected, AdminError).
 */
export async function dryRun(
  gateway: Gateway,
  edit: (draft: GatewayConfig) => void,
): Promise<readonly string[]> {
  const draft = draftOf(gateway.runtime.config);
  edit(draft);
  await checkConfigSize(gateway, gateway.runtime.config, draft);
  const runtime = gateway.compile(draft);
  await runtime.close();
  return runtime.warnings;
}

/** Schema defaults and coercions applied, or ConfigRejected located at the item's future place. */
export function checked(kind: ResourceKind, item: Named, index: number): Named {
  const issues = validateAgainst(kind.schema, item, `${kind.section}[${index}]`);
  if (issues.length > 0) throw new ConfigRejected(issues);
  return item;
}

/**
 * Replaces the item named `body.name` in `draft`, or appends it when
 * `upsert` allows; answers whether it was created. Shared by `PUT` and the
 * MCP `put_*` tools.
 */
export function putItem(
  draft: GatewayConfig,
  kind: ResourceKind,
  body: Named,
  options: { upsert: boolean; ifMatch?: string | undefined },
): boolean {
  const list = listOf(draft, kind.section);
  const index = list.findIndex((i) => i.name === body.name);
  if (index === -1 && !options.upsert) throw notFound();
  checkIfMatch(options.ifMatch, index === -1 ? undefined : list[index]);
  const item = checked(kind, body, index === -1 ? list.length : index);
  if (index === -1) list.push(item);
  else list[index] = item;
  return index === -1;
}

/** Deletes `name` from `draft` unless it is unknown or still referenced. Shared by `DELETE` and MCP. */
export function removeItem(draft: GatewayConfig, kind: ResourceKind, name: string, ifMatch?: string): void {
  const list = listOf(draft, kind.section);
  const index = list.findIndex((i) => i.name === name);
  if (index === -1) throw notFound();
  checkIfMatch(ifMatch, list[index]);
  kind.guardDelete?.(draft, name);
  list.splice(index, 1);
}

/**
 * The `Location` of a created item; undefined for a name that is not well-formed Unicode (a lone
 * surrogate, which `encodeURIComponent` cannot encode; the name schema refuses it before the write).
 */
function locationOf(base: string, name: unknown): string | undefined {
  try {
    return `${base}/${encodeURIComponent(String(name))}`;
  } catch {
    return undefined;
  }
}

/** GET list, GET/PUT/DELETE one, and POST when the kind allows it. */
export function resourceRoutes(gateway: Gateway, kind: ResourceKind): AdminRoute[] {
  const base = `/api/${kind.segment}`;
  const routes: AdminRoute[] = [
    {
      method: 'GET',
      path: base,
      auth: true,
      handler: () => json(200, listOf(gateway.runtime.config, kind.section)),
    },
    {
      method: 'GET',
      path: `${base}/:name`,
      auth: true,
      handler: ({ params }) => {
        const item = listOf(gateway.runtime.config, kind.section).find((i) => i.name === params.name);
        if (item === undefined) throw notFound();
        return json(200, item, { etag: etagOf(item) });
      },
    },
    {
      method: 'PUT',
      path: `${base}/:name`,
      auth: true,
      handler: async ({ req, params }) => {
        const { name: _fromBody, ...rest } = await readJsonObject(req, bodyLimitsOf(gateway.system));
        const name = params.name as string;
        const body: Named = { name, ...rest };
        let created = false;
        await mutate(gateway, (draft) => {
          created = putItem(draft, kind, body, { upsert: kind.upsert, ifMatch: req.headers['if-match'] });
        });
        return json(created ? 201 : 200, { status: created ? 'created' : 'updated' }, { etag: etagOf(body) });
      },
    },
    {
      method: 'DELETE',
      path: `${base}/:name`,
      auth: true,
      handler: async ({ req, params }) => {
        const name = params.name as string;
        await mutate(gateway, (draft) => removeItem(draft, kind, name, req.headers['if-match']));
        return json(200, { status: 'deleted' });
      },
    },
  ];
  if (kind.create) {
    routes.splice(1, 0, {
      method: 'POST',
      path: base,
      auth: true,
      handler: async ({ req }) => {
        const body = (await readJsonObject(req, bodyLimitsOf(gateway.system))) as Named;
        // Built before the write: nothing may throw once the item is applied and persisted (F-7).
        const location = locationOf(base, body.name);
        await mutate(gateway, (draft) => {
          const list = listOf(draft, kind.section);
          const item = checked(kind, body, list.length);
          if (list.some((i) => i.name === item.name)) {
            throw new AdminError(409, adminProblemBody(`${kind.label} '${item.name}' already exists`));
          }
          list.push(item);
        });
        return json(
          201,
          { status: 'created' },
          { etag: etagOf(body), ...(location === undefined ? {} : { location }) },
        );
      },
    });
  }
  return routes;
}
