/**
 * Discovery users outside a compiled policy (the stream pools of system.yaml `stream:`), for the
 * metrics `gateway_discovery_targets` and `gateway_discovery_errors_total`
 * (docs/service-discovery.md#metrics): the upstream nodes of a policy are found through the
 * runtime, these register here while they follow a source.
 */
export interface DiscoveryFollower {
  /** `policy` label: empty for a stream pool (it belongs to no policy). */
  readonly policy: string;
  /** `node_id` label: the stream listener (`tcp 0.0.0.0:5432`, `… sni db.example.com` for an SNI route). */
  readonly node: string;
  /** The source's label and what it holds now; null once it stopped following. */
  state(): { source: string; targets: number; errors: number } | null;
}

export const DISCOVERY_FOLLOWERS = new Set<DiscoveryFollower>();
