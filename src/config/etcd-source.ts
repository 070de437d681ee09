import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../core/logger.js';
import { EtcdClient, type EtcdSettings, type KeyValue } from './etcd-client.js';
import { checkGatewayShape, emptyGatewayConfig, type GatewayConfig } from './gateway.js';
import { ConfigRejected, type ConfigIssue } from './schema-validate.js';

/**
 * gateway.yaml kept in etcd, the reference gateway's layout: one key per
 * resource, `<prefix>/<family>/<name>`, whose value is the resource as JSON
 * (placeholders such as `${TOKEN}` stay as written). Routes come back in key
 * order, i.e. by name: in etcd mode, name routes so that the one that must
 * match first sorts first.
 */
const FAMILIES = [
  'routes',
  'policies',
  'consumers',
  'supernodes',
  'plugin_configs',
  'stores',
  'global_rules',
] as const;
type Family = (typeof FAMILIES)[number];

export interface EtcdSourceSettings extends EtcdSettings {
  prefix: string;
}

export class EtcdConfigSource {
  readonly prefix: string;
  readonly #client: EtcdClient;
  readonly #logger: Logger;

  constructor(settings: EtcdSourceSettings, logger: Logger) {
    const prefix = settings.prefix.replace(/\/+$/, '');
    if (prefix === '')
      throw new ConfigRejected([{ path: 'config.etcd.prefix', message: 'must not be empty or /' }]);
    this.prefix = prefix;
    this.#client = new EtcdClient(settings);
    this.#logger = logger;
  }

  /** The configuration under the prefix; throws ConfigRejected naming the key of a bad document. */
  async load(): Promise<GatewayConfig> {
    return this.#assemble(await this.#client.range(`${this.prefix}/`));
  }

  /**
   * The configuration under the prefix, after writing `seed()` there when the
   * prefix holds no resource yet (the first gateway of a cluster seeds it from
   * its local gateway.yaml).
   */
  async loadOrSeed(seed: () => GatewayConfig | undefined): Promise<GatewayConfig> {
    const kvs = await this.#client.range(`${this.prefix}/`);
    if (kvs.some((kv) => this.#parseKey(kv.key) !== undefined)) return this.#assemble(kvs);
    const initial = seed() ?? emptyGatewayConfig();
    await this.commit(initial);
    this.#logger.info(
      { prefix: this.prefix, routes: initial.routes.length, policies: initial.policies.length },
      'etcd prefix was empty: seeded it from the local gateway config',
    );
    return initial;
  }

  /**
   * Makes the prefix hold exactly `config`: writes every resource whose
   * document changed, then deletes resource keys it no longer has. Keys
   * outside the resource families are never touched. Not a transaction: a reader
   * in between sees a mix, which it validates as a whole and rejects or
   * applies; the watch brings it to the final state right after.
   */
  async commit(config: GatewayConfig): Promise<void> {
    const current = new Map<string, string>();
    for (const kv of await this.#client.range(`${this.prefix}/`))
      if (this.#parseKey(kv.key) !== undefined) current.set(kv.key, kv.value.toString('utf8'));
    const wanted = new Set<string>();
    for (const family of FAMILIES) {
      for (const resource of config[family] as { name: string }[]) {
        const key = `${this.prefix}/${family}/${resource.name}`;
        const value = JSON.stringify(resource);
        wanted.add(key);
        if (current.get(key) !== value) await this.#client.put(key, value);
      }
    }
    for (const key of current.keys()) if (!wanted.has(key)) await this.#client.delete(key);
  }

  /** Streams changes under the prefix; see EtcdClient.watch. */
  watch(handlers: { onEvents: () => void; onConnected: () => void; onError: (err: Error) => void }): {
    close(): void;
  } {
    return this.#client.watch(`${this.prefix}/`, handlers);
  }

  /** True when `a` and `b` would be stored as the same documents. */
  static same(a: GatewayConfig, b: GatewayConfig): boolean {
    return isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
  }

  #parseKey(key: string): { family: Family; name: string } | undefined {
    if (!key.startsWith(`${this.prefix}/`)) return undefined;
    const rest = key.slice(this.prefix.length + 1);
    const slash = rest.indexOf('/');
    if (slash <= 0 || slash === rest.length - 1) return undefined;
    const family = rest.slice(0, slash) as Family;
    return FAMILIES.includes(family) ? { family, name: rest.slice(slash + 1) } : undefined;
  }

  #assemble(kvs: readonly KeyValue[]): GatewayConfig {
    const raw: Record<Family, unknown[]> = emptyGatewayConfig();
    const issues: ConfigIssue[] = [];
    for (const kv of kvs) {
      const parsed = this.#parseKey(kv.key);
      if (parsed === undefined) continue;
      let doc: unknown;
      try {
        doc = JSON.parse(kv.value.toString('utf8'));
      } catch (err) {
        issues.push({ path: `etcd:${kv.key}`, message: `not JSON: ${(err as Error).message}` });
        continue;
      }
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
        issues.push({ path: `etcd:${kv.key}`, message: 'must be a JSON object' });
        continue;
      }
      const named = (doc as { name?: unknown }).name;
      if (named !== parsed.name)
        issues.push({
          path: `etcd:${kv.key}`,
          message: `its name is ${JSON.stringify(named)}, the key says '${parsed.name}'`,
        });
      raw[parsed.family].push(doc);
    }
    if (issues.length > 0) throw new ConfigRejected(issues);
    return checkGatewayShape(raw);
  }
}
