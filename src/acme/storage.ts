/** A certificate as persisted: full chain, its private key, and when it was issued. */
export interface StoredCert {
  cert: string;
  key: string;
  issued_at: string;
}

/** The ACME account: its private key and the CA it belongs to. */
export interface StoredAccount {
  key: string;
  directory_url: string;
  url?: string;
}

/**
 * Where certificates, the account and renewal leases live. A lease is held
 * by one owner for a bounded time so two instances sharing the storage do
 * not both place an order for the same certificate.
 */
export interface AcmeStorage {
  /** `filesystem` or `store:<name>`, for the Admin API. */
  readonly kind: string;
  loadAccount(): Promise<StoredAccount | undefined>;
  saveAccount(account: StoredAccount): Promise<void>;
  loadCert(id: string): Promise<StoredCert | undefined>;
  saveCert(id: string, cert: StoredCert): Promise<void>;
  /** True when `owner` now holds the lease on `id` (free or expired before). */
  acquireLease(id: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases the lease only when `owner` still holds it. */
  releaseLease(id: string, owner: string): Promise<void>;
}
