/** What auth nodes see of the `consumers:` section (docs/consumers.md); built by src/config/consumers.ts. */

/** A declared consumer as auth plugins see it: `${ENV}` resolved, frozen. */
export interface ConsumerRecord {
  readonly name: string;
  readonly group?: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Credentials keyed by auth plugin type, e.g. `credentials['key-auth'].key`. */
  readonly credentials: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** Read-only lookup over the `consumers:` section, built once per compiled configuration. */
export interface ConsumerIndex {
  readonly size: number;
  byName(name: string): ConsumerRecord | undefined;
  /** The consumer whose `credentials[plugin][field]` equals `value`; undefined when none or shared. */
  byCredential(plugin: string, field: string, value: string): ConsumerRecord | undefined;
  /** Every unambiguous value of `credentials[plugin][field]` with its consumer, for a node's own map. */
  credentialMap(plugin: string, field: string): ReadonlyMap<string, ConsumerRecord>;
}
