// Pure data: test/ui/credential-types.test.ts checks it against the gateway's credentialsSchema.

/** One field of a consumer credential. */
export interface CredentialField {
  key: string;
  label: string;
  kind: 'text' | 'secret' | 'pem' | 'enum' | 'boolean';
  required: boolean;
  options?: readonly string[];
}

/** A credential type a consumer can hold: the auth plugin that reads it, and its fields. */
export interface CredentialType {
  type: string;
  fields: readonly CredentialField[];
}

export const JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

/** Every credential type of docs/consumers.md, in the order the consumer form shows them. */
export const CREDENTIAL_TYPES: readonly CredentialType[] = [
  { type: 'key-auth', fields: [{ key: 'key', label: 'API key', kind: 'secret', required: true }] },
  {
    type: 'basic-auth',
    fields: [
      { key: 'username', label: 'Username', kind: 'text', required: true },
      { key: 'password', label: 'Password', kind: 'secret', required: true },
    ],
  },
  {
    type: 'jwt-auth',
    fields: [
      { key: 'key', label: 'JWT key (iss / key claim)', kind: 'text', required: true },
      { key: 'secret', label: 'JWT secret (HS*)', kind: 'secret', required: false },
      { key: 'public_key', label: 'JWT public key (PEM)', kind: 'pem', required: false },
      { key: 'algorithm', label: 'JWT algorithm', kind: 'enum', required: false, options: JWT_ALGORITHMS },
    ],
  },
  {
    type: 'hmac-auth',
    fields: [
      { key: 'access_key', label: 'HMAC access key', kind: 'text', required: true },
      { key: 'secret_key', label: 'HMAC secret key', kind: 'secret', required: true },
    ],
  },
  {
    type: 'jwe-decrypt',
    fields: [
      { key: 'key', label: 'JWE key', kind: 'text', required: true },
      { key: 'secret', label: 'JWE secret', kind: 'secret', required: true },
      { key: 'is_base64_encoded', label: 'JWE secret is base64', kind: 'boolean', required: false },
    ],
  },
];
