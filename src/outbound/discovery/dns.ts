import { getServers, promises as dnsPromises } from 'node:dns';
import type { Logger } from '../../core/logger.js';
import { ipVersion } from '../../runtime/ip-version.js';
import { parseDnsServer, querySrv, DnsQueryError, type DnsServer } from './dns-wire.js';
import { DiscoverySource, type Answer, type DiscoveredTarget } from './source.js';
import type { DnsDiscoveryOptions } from './spec.js';

/** Per try; c-ares tries each server `TRIES` times. */
const QUERY_TIMEOUT_MS = 2000;
const TRIES = 2;

/** Answers meaning "no such records" (not a failure of the resolver). */
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

interface Address {
  readonly address: string;
  readonly ttl: number;
}

/**
 * Resolves a name in the background on its TTL (clamped to `min_ttl_s`…`max_ttl_s`), never per
 * request. A/AAAA: every address of `host` on `port`. SRV (RFC 2782): every record's target
 * name resolved to its addresses, on the record's port, with its priority and weight; a record
 * of weight 0 beside weighted ones of its priority is kept as the last choice of that priority.
 */
export class DnsSource extends DiscoverySource {
  readonly #options: DnsDiscoveryOptions;
  readonly #resolver: dnsPromises.Resolver;
  readonly #servers: readonly DnsServer[];

  constructor(options: DnsDiscoveryOptions, logger: Logger) {
    super(`dns:${options.srv ?? options.host ?? ''}`, logger);
    this.#options = options;
    this.#resolver = new dnsPromises.Resolver({ timeout: QUERY_TIMEOUT_MS, tries: TRIES });
    if (options.resolvers.length > 0) this.#resolver.setServers([...options.resolvers]);
    const servers = options.resolvers.length > 0 ? options.resolvers : getServers();
    this.#servers = servers.flatMap((s) => parseDnsServer(s) ?? []);
  }

  protected get maxRetryMs(): number {
    return this.#options.minTtlS * 1000;
  }

  override stop(): void {
    super.stop();
    this.#resolver.cancel();
  }

  protected async lookup(): Promise<Answer> {
    const { srv, host, port } = this.#options;
    if (srv !== null) return this.#lookupSrv(srv);
    const addresses = await this.#addresses(host ?? '');
    if (addresses.length === 0) throw new Error(`${host}: no A or AAAA records`);
    return {
      targets: addresses.map((a) => ({ host: a.address, port, weight: 1, priority: 0 })),
      nextMs: this.#clamp(Math.min(...addresses.map((a) => a.ttl))),
    };
  }

  async #lookupSrv(name: string): Promise<Answer> {
    const records = (
      await querySrv(name, this.#servers, QUERY_TIMEOUT_MS).catch((err: unknown) => {
        if (err instanceof DnsQueryError && NO_RECORDS.has(err.code)) return [];
        throw err;
      })
    ).filter((r) => r.name !== '' && r.name !== '.'); // "." = the service is not offered (RFC 2782)
    if (records.length === 0) throw new Error(`${name}: no SRV records`);
    const weighted = new Set(records.filter((r) => r.weight > 0).map((r) => r.priority));
    let ttl = Math.min(...records.map((r) => r.ttl));
    const targets: DiscoveredTarget[] = [];
    const resolved = await Promise.all(records.map((r) => this.#addresses(r.name)));
    records.forEach((record, i) => {
      const addresses = resolved[i]!;
      const lastChoice = record.weight === 0 && weighted.has(record.priority);
      for (const a of addresses) {
        ttl = Math.min(ttl, a.ttl);
        targets.push({
          host: a.address,
          port: record.port,
          // Weight 0 of a group that is all weight 0: equal shares (RFC 2782 leaves that open).
          weight: Math.max(record.weight, 1),
          priority: record.priority * 2 + (lastChoice ? 1 : 0),
        });
      }
    });
    if (targets.length === 0) throw new Error(`${name}: no SRV target has an address`);
    return { targets, nextMs: this.#clamp(ttl) };
  }

  /** A and AAAA records of `name` with their TTLs; a literal address stands for itself. */
  async #addresses(name: string): Promise<Address[]> {
    const literal = name.replace(/\.$/, '');
    if (ipVersion(literal) !== 0) return [{ address: literal, ttl: Number.POSITIVE_INFINITY }];
    const answers = await Promise.allSettled([
      this.#resolver.resolve4(name, { ttl: true }),
      this.#resolver.resolve6(name, { ttl: true }),
    ]);
    const out: Address[] = [];
    for (const answer of answers) {
      if (answer.status === 'fulfilled') out.push(...answer.value);
      else if (!NO_RECORDS.has((answer.reason as NodeJS.ErrnoException).code ?? ''))
        throw answer.reason as Error;
    }
    return out;
  }

  #clamp(ttlS: number): number {
    const { minTtlS, maxTtlS } = this.#options;
    return Math.min(Math.max(ttlS, minTtlS), maxTtlS) * 1000;
  }
}
