/** JSON Schema of system.yaml (docs/configuration.md#systemyaml). Defaults are applied by ajv. */
import { secretsSchema } from './secrets/schema.js';
import { telemetrySchema } from './telemetry.js';

const str = { type: 'string' } as const;
const bool = (d: boolean) => ({ type: 'boolean', default: d }) as const;
const int = (d?: number, min = 0) =>
  d === undefined ? { type: 'integer', minimum: min } : { type: 'integer', minimum: min, default: d };
const port = (d?: number) =>
  d === undefined
    ? { type: 'integer', minimum: 0, maximum: 65535 }
    : { type: 'integer', minimum: 0, maximum: 65535, default: d };

const acmeSlot = {
  type: 'object',
  additionalProperties: false,
  properties: {
    domains: { type: 'array', items: str },
    challenge: {
      type: 'string',
      enum: ['tls-alpn-01', 'http-01', 'dns-01'],
      description: 'How the CA validates this certificate; unset = acme.challenge (docs/acme.md#challenges).',
    },
  },
} as const;

const tlsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    cert_path: str,
    key_path: str,
    min_version: { type: 'string', enum: ['1.2', '1.3'], default: '1.2' },
    client_ca_path: str,
    client_cert_required: bool(true),
    // PEM CRLs checked against client certificates, re-read on change (docs/tls.md#revocation).
    crl_path: str,
    // Stapled OCSP responses for the served certificates (docs/tls.md#ocsp-stapling).
    ocsp_stapling: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: bool(false),
        responder_url: { type: 'string', pattern: '^https?://' },
        refresh_seconds: int(3600, 1),
      },
    },
    sni_certs: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['server_name'],
        properties: { server_name: str, cert_path: str, key_path: str, acme: acmeSlot },
      },
    },
    acme: acmeSlot,
  },
} as const;

const upstreamTargets = {
  type: 'array',
  items: {
    type: 'object',
    required: ['host', 'port'],
    properties: { host: str, port: port(), weight: int(1, 0) },
  },
} as const;

/** The backend pool of a stream (L4) listener or of one of its SNI routes. */
const streamUpstream = {
  type: 'object',
  additionalProperties: false,
  properties: {
    targets: { ...upstreamTargets, minItems: 1 },
    // Checked in full when the listener starts (src/outbound/discovery/spec.ts, docs/service-discovery.md).
    discovery: {
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string', enum: ['dns', 'consul', 'eureka', 'nacos', 'kubernetes'] } },
      description: 'Where the targets come from instead of targets (docs/service-discovery.md).',
    },
    load_balancing: {
      type: 'string',
      enum: ['round_robin', 'least_connections', 'ip_hash'],
      default: 'round_robin',
    },
  },
} as const;

export const systemSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    listener: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        bind: { type: 'string', default: '0.0.0.0' },
        port: port(8080),
        max_request_body_bytes: int(10 * 1024 * 1024, 1),
        max_hops: {
          ...int(10, 1),
          maximum: 255,
          description:
            'Times a request may pass through this gateway (its own Via entry) before it is answered 508 Loop Detected; stops an upstream that points back at the gateway.',
        },
        max_connections: {
          anyOf: [
            { type: 'integer', minimum: 1 },
            { type: 'string', enum: ['auto'] },
          ],
          default: 'auto',
          description:
            'Open client connections at once, each in-flight HTTP/2 stream beyond the first of its connection counting as one more; a connection over it is closed on accept, a stream refused (REFUSED_STREAM). auto = max(16, floor((soft RLIMIT_NOFILE - 64) / 2)), at most 10000.',
        },
        http1_server: {
          type: 'string',
          enum: ['lean', 'node'],
          default: 'lean',
          description:
            'HTTP/1.1 server of the data plane: lean (the llhttp parser node:http uses, answers written straight to the socket; upgrades handed to node-compatible handlers) or node (node:http).',
        },
        headers_with_underscores: {
          type: 'string',
          enum: ['drop', 'reject', 'allow'],
          default: 'drop',
          description:
            'Client header names holding "_" (X_Forwarded_For): drop (default; routing, policies and the upstream never see them, as nginx underscores_in_headers off), reject (400) or allow. CGI/WSGI/PHP upstreams read X_Forwarded_For and X-Forwarded-For as one variable.',
        },
        allow_trace: {
          ...bool(false),
          description: 'Serve TRACE requests; by default they are answered 405 Method Not Allowed.',
        },
      },
    },
    tls: tlsSchema,
    http2: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: bool(true),
        max_concurrent_streams: {
          ...int(128, 1),
          description: 'SETTINGS_MAX_CONCURRENT_STREAMS advertised to every HTTP/2 client.',
        },
        max_reset_streams: {
          ...int(100, 1),
          description:
            'Streams a client may reset before their response within reset_window_seconds; more = GOAWAY ENHANCE_YOUR_CALM (rapid reset).',
        },
        reset_window_seconds: int(10, 1),
      },
    },
    timeouts: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        connection_seconds: int(30),
        read_seconds: int(30),
        write_seconds: int(30),
        idle_seconds: int(60),
        shutdown_timeout_seconds: int(30),
      },
    },
    logging: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        level: { type: 'string', default: 'info' },
        format: { type: 'string', default: 'json' },
      },
    },
    // One line per data-plane request (docs/logging.md#access-log).
    access_log: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        output: {
          type: 'string',
          minLength: 1,
          default: 'off',
          description: 'off, stdout, or the path of a file (appended; reopened on SIGUSR1 for logrotate).',
        },
        format: {
          type: 'string',
          enum: ['json', 'combined'],
          default: 'json',
          description: 'json (every field) or combined (the Apache/NCSA line log tools read).',
        },
        request_id_header: {
          type: 'string',
          minLength: 1,
          default: 'x-request-id',
          description: 'Request header logged as request_id (the request-id node sets it).',
        },
        max_buffer_bytes: {
          ...int(16 * 1024 * 1024, 4096),
          description:
            'Lines waiting for the destination beyond this many bytes are dropped and counted, not queued.',
        },
      },
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      required: ['username'],
      properties: {
        // Loopback unless asked: the admin listener speaks Basic auth, often over plain HTTP (M1).
        bind: { type: 'string', default: '127.0.0.1' },
        port: port(9090),
        username: str,
        // Empty or absent: a random password is generated and printed once (docs/admin-api.md#authentication).
        password: { type: 'string', default: '' },
        users: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['username', 'password'],
            properties: {
              username: str,
              password: str,
              // viewer: reads everything with secrets masked, writes nothing.
              role: { type: 'string', enum: ['admin', 'viewer'], default: 'admin' },
            },
          },
        },
        // GET /metrics only: Prometheus need not hold an admin password (docs/metrics.md#credentials).
        metrics_auth: {
          type: 'object',
          additionalProperties: false,
          properties: {
            username: {
              ...str,
              description: 'Basic user name accepted for GET /metrics only (with password).',
            },
            password: { ...str, description: 'Password of metrics_auth.username.' },
            bearer_token: {
              ...str,
              description:
                'Token accepted as Authorization: Bearer for GET /metrics only (at least 16 characters).',
            },
          },
        },
        ui_enabled: bool(true),
        realm: {
          type: 'string',
          minLength: 1,
          description: "Realm of the Basic challenge; default compat's admin_realm ('switchyard admin').",
        },
        max_connections: {
          ...int(256, 1),
          description: 'Open connections to the admin listener; separate from listener.max_connections.',
        },
        // Origins besides the listener's own whose browsers may send Admin writes (CSRF rule).
        allowed_origins: { type: 'array', items: str, default: [] },
        // Failed Basic logins per client address: over max_failures in window_seconds locks the
        // address for lock_seconds, doubling per lock up to max_lock_seconds (M1).
        login_throttle: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: bool(true),
            max_failures: int(10, 1),
            window_seconds: int(60, 1),
            lock_seconds: int(60, 1),
            max_lock_seconds: int(3600, 1),
            max_tracked: int(10000, 1),
          },
        },
        // Admin writes: request body bytes, JSON nesting depth, and the whole config's size (L1, L8).
        limits: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            max_body_bytes: int(10 * 1024 * 1024, 1),
            max_json_depth: int(128, 1),
            max_config_bytes: int(16 * 1024 * 1024, 1),
          },
        },
        // Versions of the applied configuration kept for GET /api/config/history and rollback.
        history: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: { max_versions: int(50, 1) },
        },
        tls: tlsSchema,
        mcp: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: bool(false),
            path: { type: 'string', default: '/mcp' },
            tokens: {
              type: 'array',
              default: [],
              items: {
                type: 'object',
                additionalProperties: false,
                properties: { token: str, scope: { type: 'string', enum: ['read', 'write'] }, name: str },
              },
            },
            allowed_origins: { type: 'array', items: str, default: [] },
          },
        },
      },
    },
    config: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        source: { type: 'string', enum: ['file', 'etcd', 'kvcluster', 'kubernetes'], default: 'file' },
        persist: bool(true),
        // Reload gateway.yaml when it changes on disk; false = only SIGHUP and the Admin API reload.
        watch: bool(true),
        // docs/kubernetes.md: the Gateway API controller (config.source: kubernetes).
        kubernetes: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            controller_name: { type: 'string', minLength: 1, default: 'switchyard.dev/gateway-controller' },
            kubeconfig: str,
            port_offset: { type: 'integer', minimum: 0, maximum: 65535, default: 0 },
            status_address: str,
            watch_namespaces: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
            leader_election: {
              type: 'object',
              additionalProperties: false,
              default: {},
              properties: {
                enabled: bool(true),
                lease_name: { type: 'string', minLength: 1, default: 'switchyard-gateway-controller' },
                lease_namespace: { type: 'string', minLength: 1 },
                lease_duration_seconds: int(15, 1),
              },
            },
          },
        },
        etcd: {
          type: 'object',
          additionalProperties: false,
          properties: {
            endpoints: { type: 'array', items: str, minItems: 1 },
            prefix: {
              type: 'string',
              description: "Key prefix of the configuration; default compat's etcd_prefix ('/switchyard').",
            },
            user: str,
            password: str,
            timeout_ms: int(3000, 1),
            // docs/etcd.md#tls: for https:// endpoints.
            tls: {
              type: 'object',
              additionalProperties: false,
              default: {},
              properties: {
                ca_file: {
                  ...str,
                  description: "PEM CA bundle that signed etcd's certificate; default the system roots.",
                },
                cert_file: { ...str, description: 'PEM client certificate (etcd --client-cert-auth).' },
                key_file: { ...str, description: 'PEM key of cert_file.' },
                server_name: {
                  ...str,
                  description: "Name checked in etcd's certificate; default the endpoint's host.",
                },
                verify: { ...bool(true), description: "Verify etcd's certificate chain and name." },
              },
            },
          },
        },
      },
    },
    stream: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['port', 'upstream'],
        properties: {
          protocol: { type: 'string', enum: ['tcp', 'udp'], default: 'tcp' },
          bind: { type: 'string', default: '0.0.0.0' },
          port: port(),
          upstream: streamUpstream,
          sni_routes: {
            type: 'array',
            default: [],
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['server_name', 'upstream'],
              properties: { server_name: { type: 'string', minLength: 1 }, upstream: streamUpstream },
            },
          },
          // TCP only: terminate TLS here and relay plain bytes (docs/stream.md#tls-termination).
          tls: tlsSchema,
        },
      },
    },
    debug: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: bool(false),
        sandbox: bool(true),
        trigger_header: {
          type: 'string',
          minLength: 1,
          description:
            "Request header that traces a request; default compat's debug_header ('x-switchyard-debug').",
        },
        trace_id_header: {
          type: 'string',
          minLength: 1,
          description:
            "Response header with the trace id; default compat's trace_id_header ('x-switchyard-trace-id').",
        },
        trace_all: bool(false),
        capture_bodies: bool(false),
        max_body_bytes: int(8192),
        max_traces: int(1000),
        max_steps: int(200),
        sandbox_timeout_seconds: int(30),
        redact_headers: { type: 'array', items: str, default: [] },
        redact_query_params: { type: 'array', items: str, default: [] },
        redact_message_keys: { type: 'array', items: str, default: [] },
        allowed_cidrs: {
          type: 'array',
          items: str,
          default: ['127.0.0.0/8', '::1/128'],
          description:
            'Client addresses (socket peer) whose trigger header is honoured; others get no trace headers. Default loopback only.',
        },
        header_secret: {
          type: 'string',
          description:
            'When set, the trigger header must carry this value (at least 16 characters); unset = any value from allowed_cidrs.',
        },
      },
    },
    acme: {
      type: 'object',
      additionalProperties: false,
      properties: {
        directory_url: { type: 'string', default: 'https://acme-v02.api.letsencrypt.org/directory' },
        directory_ca_path: str,
        contact: { type: 'array', items: str, default: [] },
        terms_of_service_agreed: { type: 'boolean' },
        eab: {
          type: 'object',
          additionalProperties: false,
          required: ['key_id', 'hmac_key'],
          properties: { key_id: str, hmac_key: str },
        },
        key_type: {
          type: 'string',
          enum: ['ecdsa-p256', 'ecdsa-p384', 'rsa-2048', 'rsa-4096'],
          default: 'ecdsa-p256',
          description: 'Key of every ACME certificate: ECDSA P-256/P-384 or RSA 2048/4096 bits.',
        },
        challenge: {
          type: 'string',
          enum: ['tls-alpn-01', 'http-01', 'dns-01'],
          default: 'tls-alpn-01',
          description:
            'Challenge of every acme slot without its own `challenge`: tls-alpn-01 on the TLS listener, http-01 on the plain-HTTP data plane, dns-01 through acme.dns_hook.',
        },
        dns_hook: {
          type: 'object',
          additionalProperties: false,
          required: ['type'],
          description: 'Publishes and removes the DNS-01 TXT records (docs/acme.md#dns-01-through-a-hook).',
          properties: {
            type: { type: 'string', enum: ['exec', 'webhook'] },
            command: {
              type: 'array',
              items: str,
              description:
                'exec: program and arguments; run with present|cleanup, domain, record name and value appended (and as SWITCHYARD_ACME_* env).',
            },
            url: {
              type: 'string',
              description: 'webhook: https:// URL receiving a POST of JSON per record.',
            },
            headers: {
              type: 'object',
              additionalProperties: str,
              description: 'webhook: extra request headers (e.g. authorization).',
            },
            ca_path: {
              type: 'string',
              description: 'webhook: PEM bundle trusted on top of the system roots.',
            },
            timeout_seconds: {
              ...int(30, 1),
              description: 'A hook run or webhook call taking longer fails the order.',
            },
            propagation_seconds: {
              ...int(0, 0),
              description: 'Wait after every record is presented before the CA is asked to validate.',
            },
          },
        },
        renew_before: { type: ['string', 'integer'], default: '30d' },
        storage: {
          type: 'object',
          required: ['type'],
          properties: {
            type: { type: 'string', enum: ['filesystem', 'store'] },
            dir: str,
            store: str,
            encryption_key: str,
          },
        },
      },
    },
    upstream: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        max_connections_per_target: {
          ...int(1024, 1),
          description:
            'Outbound connections kept to one upstream target (scheme://host:port); further requests queue within their timeout_ms.',
        },
        http1_client: {
          type: 'string',
          enum: ['lean', 'undici'],
          default: 'lean',
          description:
            "HTTP/1.1 client of cleartext upstream targets: lean (node's llhttp parser, requests written straight to the socket) or undici. TLS targets always use undici.",
        },
      },
    },
    cache: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { max_entries: int(10000, 1) },
    },
    // Branded names (headers, realm, key prefixes): ours, or the reference's; src/config/compat-names.ts.
    compat: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        reference_names: {
          ...bool(false),
          description: "Use the reference implementation's names for every key below that is not set.",
        },
        debug_header: { type: 'string', minLength: 1, description: 'Default of debug.trigger_header.' },
        trace_id_header: { type: 'string', minLength: 1, description: 'Default of debug.trace_id_header.' },
        cache_status_header: {
          type: 'string',
          minLength: 1,
          description: 'Default of proxy-cache cache_status_header.',
        },
        admin_realm: { type: 'string', minLength: 1, description: 'Default of admin.realm.' },
        etcd_prefix: { type: 'string', description: 'Default of config.etcd.prefix.' },
        store_key_prefix: { type: 'string', description: 'Default key_prefix of every stores: entry.' },
        store_layout: {
          type: 'string',
          enum: ['switchyard', 'reference'],
          description: 'Layout of limit counters and sealed sessions in stores.',
        },
      },
    },
    // Secret managers for `${secret:…}` references (docs/secrets.md).
    secrets: secretsSchema,
    // OTLP export of metrics, logs and traces (docs/opentelemetry.md).
    telemetry: telemetrySchema,
    workers: {
      anyOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', enum: ['auto'] },
      ],
      default: 1,
      description:
        "Data-plane worker processes (node:cluster); 'auto' = available cores capped by the cgroup CPU quota. 1 = one process, no primary (docs/workers.md).",
    },
  },
} as const;
