import type { Store, StoreLookup } from '../stores/index.js';
import { Sealer } from '../sessions/sealer.js';
import type { AcmeStorage, StoredAccount, StoredCert } from './storage.js';

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const ACQUIRE = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0`;

/**
 * ACME state in a `stores:` entry of gateway.yaml, under the store's key
 * prefix: `acme:account`, `acme:cert:{<id>}`, `acme:lease:{<id>}`. Private
 * keys are sealed (AES-256-GCM) with `storage.encryption_key`; the chain is
 * stored in clear. The store is looked up on every call, so a reload that
 * rebuilds its connection is picked up.
 */
export class StoreStorage implements AcmeStorage {
  readonly kind: string;
  readonly #name: string;
  readonly #stores: () => StoreLookup;
  readonly #sealer: Sealer;

  constructor(name: string, encryptionKey: string, stores: () => StoreLookup) {
    this.kind = `store:${name}`;
    this.#name = name;
    this.#stores = stores;
    this.#sealer = new Sealer(encryptionKey);
  }

  async loadAccount(): Promise<StoredAccount | undefined> {
    const raw = await this.#store().get('acme:account');
    if (raw === null) return undefined;
    const stored = JSON.parse(raw) as StoredAccount;
    const key = this.#sealer.open(stored.key, 'acme:account');
    if (key === undefined) throw new Error('cannot open the stored ACME account key (wrong encryption_key?)');
    return { ...stored, key };
  }

  async saveAccount(account: StoredAccount): Promise<void> {
    const sealed = { ...account, key: this.#sealer.seal(account.key, 'acme:account') };
    await this.#store().set('acme:account', JSON.stringify(sealed));
  }

  async loadCert(id: string): Promise<StoredCert | undefined> {
    const raw = await this.#store().get(`acme:cert:{${id}}`);
    if (raw === null) return undefined;
    const stored = JSON.parse(raw) as StoredCert;
    const key = this.#sealer.open(stored.key, `acme:cert:${id}`);
    if (key === undefined) throw new Error(`cannot open the stored key of ${id} (wrong encryption_key?)`);
    return { ...stored, key };
  }

  async saveCert(id: string, cert: StoredCert): Promise<void> {
    const sealed = { ...cert, key: this.#sealer.seal(cert.key, `acme:cert:${id}`) };
    await this.#store().set(`acme:cert:{${id}}`, JSON.stringify(sealed));
  }

  async acquireLease(id: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#store().eval(ACQUIRE, [`acme:lease:{${id}}`], [owner, ttlMs])) === 1;
  }

  async releaseLease(id: string, owner: string): Promise<void> {
    await this.#store().eval(RELEASE, [`acme:lease:{${id}}`], [owner]);
  }

  #store(): Store {
    const store = this.#stores().get(this.#name);
    if (store === undefined) throw new Error(`store '${this.#name}' is not configured in gateway.yaml`);
    return store;
  }
}
