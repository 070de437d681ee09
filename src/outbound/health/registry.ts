import { TargetCheck, type ActivePolicy, type CheckSubscriber } from './active.js';
import { PassiveHealth, type PassivePolicy } from './passive.js';

/** A counted use of a shared health state; `release()` once, when the upstream node is closed. */
export interface HealthLease<T> {
  readonly state: T;
  readonly release: () => void;
}

interface PassiveEntry {
  readonly health: PassiveHealth;
  refs: number;
}

/**
 * Health state that outlives a compiled policy (docs/plugins/upstream.md#health-checks), one
 * per gateway (its scope, `upstream.health`): a reload compiles the new upstream nodes before the
 * old ones are closed, so a node whose target and probe are unchanged finds the running state
 * and a target marked down stays down.
 *
 * - Active checks: one `TargetCheck` per distinct (target, probe) key (`checkKey`), shared by
 *   every upstream node of every policy (and `config_ref`) that probes the same target the same
 *   way; stopped when the last node using it is closed.
 * - Passive health: one `PassiveHealth` per (upstream node, target, passive settings): the
 *   successor of a node keeps the ejections and failure streaks of the targets it keeps.
 */
export class HealthRegistry {
  readonly #checks = new Map<string, TargetCheck>();
  readonly #passive = new Map<string, PassiveEntry>();

  /** Subscribes to the check of `key`, creating and starting it on first use. */
  check(key: string, policy: ActivePolicy, subscriber: CheckSubscriber): HealthLease<TargetCheck> {
    let check = this.#checks.get(key);
    if (check === undefined) {
      check = new TargetCheck(policy);
      this.#checks.set(key, check);
    }
    check.subscribe(subscriber);
    const held = check;
    let released = false;
    return {
      state: held,
      release: () => {
        if (released) return;
        released = true;
        if (held.unsubscribe(subscriber) > 0) return;
        held.stop();
        if (this.#checks.get(key) === held) this.#checks.delete(key);
      },
    };
  }

  /** The passive health kept under `key`, made on first use. */
  passive(key: string, policy: PassivePolicy): HealthLease<PassiveHealth> {
    let entry = this.#passive.get(key);
    if (entry === undefined) {
      entry = { health: new PassiveHealth(policy), refs: 0 };
      this.#passive.set(key, entry);
    }
    entry.refs++;
    const held = entry;
    let released = false;
    return {
      state: held.health,
      release: () => {
        if (released) return;
        released = true;
        if (--held.refs === 0 && this.#passive.get(key) === held) this.#passive.delete(key);
      },
    };
  }

  /** Active checks running (diagnostics and tests). */
  get checks(): number {
    return this.#checks.size;
  }
}

/** The registry of a gateway scope: upstream nodes compiled by one gateway share it. */
export const HEALTH_SCOPE_KEY = 'upstream.health';
