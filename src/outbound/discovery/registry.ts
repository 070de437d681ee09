import type { Logger } from '../../core/logger.js';
import type { DiscoverySpec } from './spec.js';
import { DnsSource } from './dns.js';
import { ConsulSource } from './consul.js';
import { EurekaSource } from './eureka.js';
import { NacosSource } from './nacos.js';
import { KubernetesSource } from './kubernetes.js';
import type { DiscoverySource } from './source.js';

/** A counted use of a shared source; `release()` once, when the upstream node is closed. */
export interface SourceLease {
  readonly source: DiscoverySource;
  readonly release: () => void;
}

interface Entry {
  readonly source: DiscoverySource;
  refs: number;
}

/**
 * The discovery sources of one gateway (its scope, `upstream.discovery`): one source per
 * distinct `discovery:` block, shared by every upstream node that declares it. A reload compiles
 * the new nodes before it closes the old ones, so an unchanged block keeps its running source
 * and its last answer: the new nodes start with the targets already known, and no look-up is
 * repeated. The last node to release a source stops it.
 */
export class DiscoveryRegistry {
  readonly #entries = new Map<string, Entry>();

  acquire(spec: DiscoverySpec, logger: Logger): SourceLease {
    const key = JSON.stringify(spec);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { source: createSource(spec, logger), refs: 0 };
      this.#entries.set(key, entry);
    }
    entry.refs++;
    const held = entry;
    let released = false;
    return {
      source: held.source,
      release: () => {
        if (released) return;
        released = true;
        if (--held.refs > 0) return;
        held.source.stop();
        if (this.#entries.get(key) === held) this.#entries.delete(key);
      },
    };
  }

  /** Sources running (diagnostics and tests). */
  get size(): number {
    return this.#entries.size;
  }
}

function createSource(spec: DiscoverySpec, logger: Logger): DiscoverySource {
  switch (spec.type) {
    case 'dns':
      return new DnsSource(spec, logger);
    case 'consul':
      return new ConsulSource(spec, logger);
    case 'eureka':
      return new EurekaSource(spec, logger);
    case 'nacos':
      return new NacosSource(spec, logger);
    case 'kubernetes':
      return new KubernetesSource(spec, logger);
  }
}

/** The registry of a gateway scope: upstream nodes compiled by one gateway share it. */
export const DISCOVERY_SCOPE_KEY = 'upstream.discovery';
