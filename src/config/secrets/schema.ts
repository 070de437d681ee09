/** JSON Schema of system.yaml `secrets:` (docs/secrets.md): one entry per manager type. */

const str = { type: 'string', minLength: 1 } as const;
const refresh = {
  type: 'integer',
  minimum: 1,
  default: 300,
  description: 'Seconds between re-reads of every value of this manager (docs/secrets.md#refresh).',
} as const;

export const secretsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Secret managers read by `${secret:<manager>:<path>#<field>}` references (docs/secrets.md).',
  properties: {
    file: {
      type: 'object',
      additionalProperties: false,
      properties: {
        refresh_s: refresh,
        dirs: {
          type: 'array',
          minItems: 1,
          items: str,
          description:
            'Folders references may read from (a path elsewhere is refused); unset: any file the gateway can read.',
        },
      },
    },
    vault: {
      type: 'object',
      additionalProperties: false,
      required: ['address'],
      properties: {
        address: { ...str, description: 'Base URL of the Vault server, e.g. https://vault:8200.' },
        mount: { ...str, default: 'secret', description: 'Mount path of the KV v2 engine.' },
        token: { ...str, description: 'A Vault token (renewed with renew-self before it expires).' },
        approle: {
          type: 'object',
          additionalProperties: false,
          required: ['role_id', 'secret_id'],
          properties: { role_id: str, secret_id: str, mount: { ...str, default: 'approle' } },
        },
        kubernetes: {
          type: 'object',
          additionalProperties: false,
          required: ['role'],
          description: "Kubernetes auth: the pod's service-account token is exchanged for a Vault token.",
          properties: {
            role: { ...str, description: 'The Vault role bound to the service account.' },
            token_path: {
              ...str,
              default: '/var/run/secrets/kubernetes.io/serviceaccount/token',
              description: 'The service-account JWT, read again at each login (projected tokens rotate).',
            },
            mount: {
              ...str,
              default: 'kubernetes',
              description: 'Mount path of the Kubernetes auth method.',
            },
          },
        },
        namespace: { ...str, description: 'X-Vault-Namespace (Vault Enterprise).' },
        tls: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: { ca_file: { ...str, description: 'CA bundle that signs the server certificate.' } },
        },
        timeout_ms: { type: 'integer', minimum: 1, default: 5000 },
        refresh_s: refresh,
      },
    },
    aws: {
      type: 'object',
      additionalProperties: false,
      required: ['region'],
      properties: {
        region: str,
        endpoint: {
          ...str,
          description: 'Base URL instead of https://secretsmanager.<region>.amazonaws.com.',
        },
        access_key_id: str,
        secret_access_key: str,
        session_token: str,
        timeout_ms: { type: 'integer', minimum: 1, default: 5000 },
        refresh_s: refresh,
      },
    },
    gcp: {
      type: 'object',
      additionalProperties: false,
      properties: {
        project: {
          ...str,
          description: "Project of references that name only a secret; default the key's project_id.",
        },
        credentials_file: {
          ...str,
          description: 'A service-account JSON key; default $GOOGLE_APPLICATION_CREDENTIALS.',
        },
        endpoint: { ...str, description: 'Base URL instead of https://secretmanager.googleapis.com.' },
        timeout_ms: { type: 'integer', minimum: 1, default: 5000 },
        refresh_s: refresh,
      },
    },
    kubernetes: {
      type: 'object',
      additionalProperties: false,
      properties: {
        kubeconfig: {
          ...str,
          description:
            'A kubeconfig file; default in-cluster credentials under a pod, else $KUBECONFIG or ~/.kube/config.',
        },
        timeout_ms: { type: 'integer', minimum: 1, default: 5000 },
        refresh_s: refresh,
      },
    },
  },
} as const;

export interface FileManagerConfig {
  refresh_s: number;
  dirs?: string[];
}

export interface VaultManagerConfig {
  address: string;
  mount: string;
  token?: string;
  approle?: { role_id: string; secret_id: string; mount: string };
  kubernetes?: { role: string; token_path: string; mount: string };
  namespace?: string;
  tls: { ca_file?: string };
  timeout_ms: number;
  refresh_s: number;
}

export interface AwsManagerConfig {
  region: string;
  endpoint?: string;
  access_key_id?: string;
  secret_access_key?: string;
  session_token?: string;
  timeout_ms: number;
  refresh_s: number;
}

export interface GcpManagerConfig {
  project?: string;
  credentials_file?: string;
  endpoint?: string;
  timeout_ms: number;
  refresh_s: number;
}

export interface KubernetesManagerConfig {
  kubeconfig?: string;
  timeout_ms: number;
  refresh_s: number;
}

/** system.yaml `secrets:` after the schema's defaults. */
export interface SecretsConfig {
  file?: FileManagerConfig;
  vault?: VaultManagerConfig;
  aws?: AwsManagerConfig;
  gcp?: GcpManagerConfig;
  kubernetes?: KubernetesManagerConfig;
}
