// Lease-based leader election (coordination.k8s.io/v1): the holder renews the Lease every third
// of leaseDurationSeconds; another replica takes it over once renewTime + leaseDurationSeconds
// has passed. Every write carries the resourceVersion read, so two replicas racing for it get one
// success and one 409. Only the leader writes statuses; every replica serves traffic. A leader that
// stops releases the Lease (empty holderIdentity), so another replica takes over at its next try
// instead of after the Lease expires; one that dies is replaced once the Lease has expired.
import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../core/logger.js';

export interface LeaderOptions {
  name: string;
  namespace: string;
  identity: string;
  leaseDurationSeconds: number;
}

export class LeaderElector {
  readonly #api: CoordinationV1Api;
  readonly #options: LeaderOptions;
  readonly #logger: Logger;
  #leader = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #inflight: Promise<void> = Promise.resolve();
  readonly #onChange: (leader: boolean) => void;

  constructor(kc: KubeConfig, options: LeaderOptions, logger: Logger, onChange: (leader: boolean) => void) {
    this.#api = kc.makeApiClient(CoordinationV1Api);
    this.#options = options;
    this.#logger = logger;
    this.#onChange = onChange;
  }

  get leader(): boolean {
    return this.#leader;
  }

  start(): void {
    this.#inflight = this.#tick();
  }

  /** Stops renewing; with `release` (default) a held Lease is handed back. Never rejects. */
  async stop(release = true): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#inflight;
    const held = this.#leader;
    this.#set(false);
    if (!held || !release) return;
    const { name, namespace, identity } = this.#options;
    try {
      const lease = await this.#api.readNamespacedLease({ name, namespace });
      if (lease.spec?.holderIdentity !== identity) return;
      await this.#api.replaceNamespacedLease({
        name,
        namespace,
        body: {
          ...lease,
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new Date() },
        },
      });
      this.#logger.info({ lease: name, identity }, 'kubernetes: lease released');
    } catch (err) {
      this.#logger.warn({ err, lease: name }, 'kubernetes: lease release failed; it expires by itself');
    }
  }

  #set(leader: boolean): void {
    if (leader === this.#leader) return;
    this.#leader = leader;
    this.#logger.info(
      { lease: this.#options.name, identity: this.#options.identity, leader },
      'kubernetes: leadership changed',
    );
    this.#onChange(leader);
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      this.#set(await this.#tryAcquire());
    } catch (err) {
      this.#logger.warn({ err, lease: this.#options.name }, 'kubernetes: lease update failed');
      this.#set(false);
    }
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => {
        this.#inflight = this.#tick();
      },
      Math.max(200, (this.#options.leaseDurationSeconds * 1000) / 3),
    );
  }

  async #tryAcquire(): Promise<boolean> {
    const { name, namespace, identity, leaseDurationSeconds } = this.#options;
    const now = new Date();
    let lease: V1Lease | undefined;
    try {
      lease = await this.#api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: now,
      acquireTime: now,
      leaseTransitions: 0,
    };
    if (lease === undefined) {
      try {
        await this.#api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec } });
        return true;
      } catch (err) {
        if ((err as { code?: number }).code === 409) return false;
        throw err;
      }
    }
    const held = lease.spec?.holderIdentity;
    const renewed = lease.spec?.renewTime === undefined ? 0 : new Date(lease.spec.renewTime).getTime();
    const duration = (lease.spec?.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    const mine = held === identity;
    if (!mine && held !== undefined && held !== '' && renewed + duration > now.getTime()) return false;
    try {
      await this.#api.replaceNamespacedLease({
        name,
        namespace,
        body: {
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: identity,
            leaseDurationSeconds,
            renewTime: now,
            ...(mine ? {} : { acquireTime: now, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 }),
          },
        },
      });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 409) return false;
      throw err;
    }
  }
}
