import { mockPolicyYaml } from '../admin/harness.js';

/** The operator review's 12-node users-policy (shared/reports/operator-review.md, appendix A) on local stores, as a `policies:` item. */
export const USERS_POLICY_ITEM = `
  - name: users-policy
    error_handler: eh
    nodes:
      - { id: listener, type: listener }
      - { id: cors, type: cors, config: { allowed_origins: ["https://app.example.com"] } }
      - { id: auth, type: key-auth, config: { use_consumers: true, hide_credentials: true } }
      - { id: quota, type: limit-count, config: { count: 5, time_window: 60, key: $consumer_name, policy: local, rejected_code: 429 } }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: users, policy: local, cache_ttl: 30 } }
      - id: canary
        type: traffic-split
        config:
          rules:
            - weighted_upstreams:
                - weight: 80
                - { weight: 20, upstream: { targets: [{ host: 127.0.0.1, port: 9 }] } }
      - { id: users-up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }], timeout_ms: 5000 } }
      - { id: store, type: proxy-cache, config: { phase: store, id: users, policy: local, cache_ttl: 30 } }
      - { id: cors-response, type: cors, config: { allowed_origins: ["https://app.example.com"] } }
      - { id: cors-canary, type: cors, config: { allowed_origins: ["https://app.example.com"] } }
      - { id: eh, type: error-handler, config: { status_code: 502 } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: cors.in }
      - { from: cors.preflight, to: client.in }
      - { from: cors.success, to: auth.in }
      - { from: auth.denied, to: client.in }
      - { from: auth.success, to: quota.in }
      - { from: quota.limited, to: client.in }
      - { from: quota.success, to: lookup.in }
      - { from: lookup.hit, to: client.in }
      - { from: lookup.success, to: canary.in }
      - { from: canary.routed, to: cors-canary.in }
      - { from: cors-canary.success, to: client.in }
      - { from: cors-canary.preflight, to: client.in }
      - { from: canary.success, to: users-up.in }
      - { from: users-up.success, to: store.in }
      - { from: store.success, to: cors-response.in }
      - { from: store.hit, to: client.in }
      - { from: cors-response.success, to: client.in }
      - { from: cors-response.preflight, to: client.in }
      - { from: eh.success, to: client.in }
`;

/** Routes, a consumer and two policies: users-policy and hello-policy. */
export const USERS_POLICY_YAML = `consumers:
  - { name: alice, credentials: { key-auth: { key: alice-key } } }
routes:
  - { name: users, match: { path: /users/* }, policy: users-policy }
  - { name: hello, match: { path: /hello }, policy: hello-policy }
policies:${USERS_POLICY_ITEM}${mockPolicyYaml('hello-policy', 'hello')}`;
